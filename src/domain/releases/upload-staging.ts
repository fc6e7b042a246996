import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statfsSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isoTime } from "../clock";
import { UPLOAD_LIMITS, type UploadFile } from "./upload-model";

/** An upload as kept on disk (`<staging>/<id>/upload.json`); the bytes received are the sizes of its files. */
export interface UploadRecord {
  readonly id: string;
  readonly lane: string;
  readonly folder: string;
  readonly files: readonly UploadFile[];
  readonly halted: boolean;
  readonly created: number;
  readonly touched: number;
}

export interface UploadView {
  readonly id: string;
  readonly lane: string;
  readonly folder: string;
  readonly halted: boolean;
  readonly created: string;
  readonly expires: string;
  readonly files: readonly (UploadFile & { readonly received: number })[];
}

export const UPLOAD_ID = /^upl_[0-9a-f]{32}$/;

/**
 * The staging area of release uploads, `<data>/uploads/<id>/`: its record (`upload.json`) and its
 * files (`files/<name>`, as many bytes as were received), the folder that is renamed into the
 * release tree once checked. Ids are checked against UPLOAD_ID before they reach a path.
 */
export class UploadStaging {
  constructor(readonly dir: string) {}

  /** The folder of an upload's files. */
  filesOf(id: string): string {
    return join(this.dir, id, "files");
  }

  /** A new upload's folder, with each of its files empty. */
  make(record: UploadRecord): void {
    const files = this.filesOf(record.id);
    mkdirSync(files, { recursive: true, mode: 0o700 });
    for (const f of record.files) writeFileSync(join(files, f.name), "", { mode: 0o644 });
    this.save(record);
  }

  ids(): string[] {
    try {
      return readdirSync(this.dir).filter((n) => UPLOAD_ID.test(n));
    } catch {
      return [];
    }
  }

  list(): UploadRecord[] {
    return this.ids().flatMap((n) => this.read(n) ?? []);
  }

  read(id: string): UploadRecord | null {
    if (!UPLOAD_ID.test(id)) return null;
    try {
      const r = JSON.parse(readFileSync(join(this.dir, id, "upload.json"), "utf8")) as UploadRecord;
      return r.id === id ? r : null;
    } catch {
      return null;
    }
  }

  save(record: UploadRecord): void {
    const dir = join(this.dir, record.id);
    const tmp = join(dir, `.upload.json.${process.pid}`);
    writeFileSync(tmp, JSON.stringify(record), { mode: 0o600 });
    renameSync(tmp, join(dir, "upload.json"));
  }

  remove(id: string): void {
    if (UPLOAD_ID.test(id)) rmSync(join(this.dir, id), { recursive: true, force: true });
  }

  /** The bytes received of each file. */
  view(r: UploadRecord): UploadView {
    const dir = this.filesOf(r.id);
    return {
      id: r.id,
      lane: r.lane,
      folder: r.folder,
      halted: r.halted,
      created: isoTime(r.created),
      expires: isoTime(r.touched + UPLOAD_LIMITS.expiryMs),
      files: r.files.map((f) => ({ ...f, received: statSync(join(dir, f.name), { throwIfNoEntry: false })?.size ?? 0 })),
    };
  }

  /** The bytes free on the staging area's filesystem (null when it cannot be told). */
  freeBytes(): number | null {
    try {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      const s = statfsSync(this.dir);
      return Number(s.bavail) * Number(s.bsize);
    } catch {
      return null;
    }
  }
}

/** Whether two listings name the same files (names, sizes, hashes; in any order). */
export function sameFiles(a: readonly UploadFile[], b: readonly UploadFile[]): boolean {
  const key = (files: readonly UploadFile[]) =>
    files
      .map((f) => `${f.name} ${f.size} ${f.sha256}`)
      .sort()
      .join("\n");
  return key(a) === key(b);
}
