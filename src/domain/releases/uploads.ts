import { randomBytes } from "node:crypto";
import {
  accessSync,
  chmodSync,
  closeSync,
  constants,
  cpSync,
  existsSync,
  fchmodSync,
  fstatSync,
  ftruncateSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { dirname, join } from "node:path";
import type { Variant } from "../../config/variants";
import type { AuditAction } from "../audit";
import type { AuditRecord, Store } from "../../store/types";
import { actorOf, type AdminCaller } from "../admin/deps";
import type { Clock } from "../clock";
import { KeyturnError } from "../errors";
import { newEvent } from "../events";
import { newId } from "../ids";
import type { PublicKeyInfo } from "../keys";
import { hashFile, readRegularFile } from "./files";
import { feedFilesOf } from "./feed-files";
import { ReleaseProblem } from "./problem";
import { laneName, placeOfLane } from "./release-controls";
import type { ReleaseIndex } from "./release-index";
import { inspectFolder } from "./scan";
import { SignatureCache } from "./signature-cache";
import { UPLOAD_LIMITS, type UploadCreate } from "./upload-model";
import { sameFiles, UploadStaging, type UploadRecord, type UploadView } from "./upload-staging";

export interface ReleaseUploadsDeps {
  readonly variant: Variant;
  readonly store: Store;
  readonly clock: Clock;
  /** Where uploads wait until published: `<data>/uploads`, outside the release tree. */
  readonly stagingDir: string;
  readonly releasesRoot: string;
  /** The release public keys the site checks the tree with (the private key stays with the vendor). */
  readonly releaseKeys: () => ReadonlyMap<string, PublicKeyInfo>;
  /** The live index now, and a re-scan (the tree watch would notice the new folder too, a moment later). */
  readonly index: () => ReleaseIndex | null;
  readonly rescan: () => Promise<ReleaseIndex>;
  /** A mirror serves its vendor's tree: it takes no uploads. */
  readonly mirror: boolean;
  /** The staging filesystem's free bytes (statfs when absent; tests give a small disk). */
  readonly freeBytes?: () => number | null;
}

export interface Published {
  readonly release: { readonly lane: string; readonly version: string; readonly folder: string };
  readonly halted: boolean;
  /** Live in the index the publication's re-scan built (false while its installer is still being verified). */
  readonly live: boolean;
  readonly ref: string;
}

const MAX_MANIFEST_BYTES = 64 * 1024;
/** Room left on the disk beyond an upload's bytes (the records and logs live there too). */
export const DISK_MARGIN = 256 * 1024 ** 2;

const notFound = () => new KeyturnError("not_found", "There is no such upload (it may have been published, abandoned or expired).");

/**
 * Release uploads: a vendor's CI sends a signed release folder file by file, in chunks, resumable
 * at the byte the site holds; the site checks it as `release check` and the scan do, and only then
 * moves it into the tree whole, with one rename. Until then its bytes wait under the data
 * directory, never in the tree; a refused release is removed at once, an abandoned one at expiry.
 */
export class ReleaseUploads {
  /** Files being written (`id/name`) and uploads being published, in this process. */
  private readonly busy = new Set<string>();
  private readonly staging: UploadStaging;

  constructor(private readonly d: ReleaseUploadsDeps) {
    this.staging = new UploadStaging(d.stagingDir);
  }

  /**
   * Starts an upload, or answers the pending one of the same folder with the same files (a push
   * started again resumes it). A pending upload of the folder with other files is replaced.
   */
  async create(input: UploadCreate, caller: AdminCaller): Promise<{ upload: UploadView; resumed: boolean }> {
    this.available();
    const { variant } = this.d;
    const place = placeOfLane(variant, input.lane);
    if (!place) throw invalid(`lane must be ${variant.products.length > 0 ? "product/channel/platform" : "channel/platform"} of ${variant.name}.`);
    const names = new Set<string>();
    let total = 0;
    for (const f of input.files) {
      if (f.name.includes("..")) throw invalid(`files: ${f.name} must be a plain file name (no ..).`);
      if (names.has(f.name)) throw invalid(`files: ${f.name} is listed twice.`);
      names.add(f.name);
      total += f.size;
    }
    if (input.folder.includes("..")) throw invalid("folder must be a plain name (no ..).");
    for (const name of [variant.manifestFile, `${variant.manifestFile}.sig`]) {
      const f = input.files.find((x) => x.name === name);
      if (!f) throw invalid(`files must include ${name}.`);
      if (f.size > MAX_MANIFEST_BYTES) throw new KeyturnError("payload_too_large", `${name} is limited to ${MAX_MANIFEST_BYTES} bytes.`);
    }
    if (total > UPLOAD_LIMITS.releaseBytes) throw new KeyturnError("payload_too_large", `A release is limited to ${UPLOAD_LIMITS.releaseBytes} bytes in all.`);
    this.refuseExisting(input.lane, input.folder);

    const now = this.d.clock();
    this.sweep(now);
    const pending = this.staging.list();
    const same = pending.find((u) => u.lane === input.lane && u.folder === input.folder);
    if (same && sameFiles(same.files, input.files)) {
      // The push started again (perhaps now --halted, or no longer): its bytes are kept, its choice is the latest.
      const resumed = { ...same, halted: input.halted ?? false, touched: now };
      this.staging.save(resumed);
      return { upload: this.staging.view(resumed), resumed: true };
    }
    if (same && this.inUse(same.id)) {
      const e = new KeyturnError(
        "upload_conflict",
        `Another upload of ${input.lane}/${input.folder} is being written to or published; try again once it has ended.`,
      );
      // As a PUT that finds its file in use: a push cut off a moment ago may still be ending here.
      e.headers = { "retry-after": "1" };
      throw e;
    }
    if (same) this.staging.remove(same.id);
    else if (pending.length >= UPLOAD_LIMITS.pending)
      throw new KeyturnError("upload_conflict", `${UPLOAD_LIMITS.pending} uploads are pending; publish or abandon one, or wait for one to expire.`);
    // The bytes other pending uploads are still to receive are promised already: several pushes
    // at once (a CI matrix) must not together fill the disk the records are on.
    const others = pending.filter((u) => u.id !== same?.id);
    const promised = others.reduce((n, u) => n + this.staging.view(u).files.reduce((m, f) => m + Math.max(0, f.size - f.received), 0), 0);
    const free = this.d.freeBytes ? this.d.freeBytes() : this.staging.freeBytes();
    if (free !== null && total + promised + DISK_MARGIN > free) {
      const named = others.slice(0, 4).map((u) => `${u.lane}/${u.folder}`);
      const promise =
        others.length === 0
          ? ""
          : `, ${promised} of them promised to the uploads pending (${named.join(", ")}${others.length > 4 ? ", …" : ""}), freed when each is published, abandoned or expires a day after its last byte`;
      throw new KeyturnError("payload_too_large", `The site has ${free} bytes free${promise}; this release needs ${total}.`);
    }

    const record: UploadRecord = {
      id: `upl_${randomBytes(16).toString("hex")}`,
      lane: input.lane,
      folder: input.folder,
      files: input.files.map((f) => ({ name: f.name, size: f.size, sha256: f.sha256 })),
      halted: input.halted ?? false,
      created: now,
      touched: now,
    };
    this.staging.make(record);
    await this.d.store.writeAudit(this.auditLine(caller, "release-upload"));
    return { upload: this.staging.view(record), resumed: false };
  }

  /** An upload and how much of each file the site holds. */
  get(id: string): UploadView {
    return this.staging.view(this.load(id));
  }

  /**
   * Writes `body` into a file of an upload at `start` (the byte the site holds: a resumed push
   * sends from there), `length` bytes at most. Bytes received before a cut connection are kept.
   * A file's last byte makes the site hash it: a file that does not match its SHA-256 is emptied.
   */
  async write(id: string, name: string, range: { start: number; end: number; total: number }, body: ReadableStream<Uint8Array> | null) {
    const record = this.load(id);
    const file = record.files.find((f) => f.name === name);
    if (!file) throw new KeyturnError("not_found", `The upload has no file ${name.slice(0, 200)}.`);
    const length = range.end - range.start + 1;
    if (range.total !== file.size || range.end >= file.size || length < 1)
      throw invalid(`Content-Range must lie within ${file.name}'s ${file.size} bytes (bytes START-END/${file.size}).`);
    if (length > UPLOAD_LIMITS.chunkBytes) throw new KeyturnError("payload_too_large", `A PUT carries at most ${UPLOAD_LIMITS.chunkBytes} bytes.`);
    const key = `${id}/${name}`;
    if (this.busy.has(key) || this.busy.has(id)) {
      // Often the request of a push that was cut off, still ending on this side: a retry soon finds it done.
      const e = new KeyturnError("upload_conflict", `${file.name} is being written by another request; try again shortly.`);
      e.headers = { "retry-after": "1" };
      throw e;
    }
    this.busy.add(key);
    try {
      const path = join(this.staging.filesOf(id), name);
      const fd = openSync(path, constants.O_WRONLY | constants.O_NOFOLLOW);
      let written = 0;
      try {
        const held = fstatSync(fd).size;
        if (held !== range.start) {
          const e = new KeyturnError("upload_conflict", `The site holds ${held} bytes of ${file.name}; send from byte ${held}.`);
          e.headers = { "upload-offset": String(held) };
          throw e;
        }
        if (!body) throw invalid("The request has no body.");
        const reader = body.getReader();
        for (;;) {
          let chunk: Awaited<ReturnType<typeof reader.read>>;
          try {
            chunk = await reader.read();
          } catch {
            throw invalid(`The body ended early; the site kept ${written} bytes of it: send ${file.name} from byte ${range.start + written}.`);
          }
          if (chunk.done) break;
          const room = length - written;
          if (chunk.value.byteLength > room) {
            await reader.cancel().catch(() => {});
            ftruncateSync(fd, range.start + written);
            throw invalid(`The body is longer than its Content-Range (${length} bytes).`);
          }
          for (let off = 0; off < chunk.value.byteLength; ) off += writeSync(fd, chunk.value, off, chunk.value.byteLength - off, range.start + written + off);
          written += chunk.value.byteLength;
        }
        if (written < length)
          throw invalid(`The body ended after ${written} of ${length} bytes; the site kept them: send ${file.name} from byte ${range.start + written}.`);
      } finally {
        closeSync(fd);
        this.staging.save({ ...record, touched: this.d.clock() });
      }
      const received = range.start + written;
      if (received === file.size && hashFile(path) !== file.sha256) {
        writeFileSync(path, "");
        throw new KeyturnError("release_invalid", `${file.name} does not match the sha256 given for it; the site discarded it: send it again.`);
      }
      return { name: file.name, size: file.size, received };
    } finally {
      this.busy.delete(key);
    }
  }

  /** Removes an upload and its bytes. */
  async abandon(id: string, caller: AdminCaller): Promise<void> {
    this.load(id);
    if (this.inUse(id)) throw new KeyturnError("upload_conflict", "The upload is being written to or published; abandon it once that request has ended.");
    this.staging.remove(id);
    await this.d.store.writeAudit(this.auditLine(caller, "release-upload-abandon"));
  }

  /**
   * Checks the complete upload as `release check` and the scan do (manifest, agreement with its
   * lane, signature with the site's release public keys, the installer's size and hashes, feed
   * files), and moves it into the tree with one rename. Refused: the upload is removed, nothing is
   * left in the tree, and the refusal carries the check's message.
   */
  async publish(id: string, caller: AdminCaller): Promise<Published> {
    this.available();
    const record = this.load(id);
    const { variant } = this.d;
    const dir = this.staging.filesOf(id);
    for (const f of record.files) {
      const held = statSync(join(dir, f.name)).size;
      if (held !== f.size) throw new KeyturnError("upload_conflict", `${f.name} has ${held} of its ${f.size} bytes; send the rest first.`);
    }
    if (this.inUse(id)) throw new KeyturnError("upload_conflict", "The upload is being written to or published by another request.");
    this.busy.add(id);
    try {
      const place = placeOfLane(variant, record.lane)!;
      let inspected;
      try {
        for (const f of record.files)
          if (hashFile(join(dir, f.name)) !== f.sha256) throw new ReleaseProblem(`${f.name} does not match the sha256 given for it`);
        inspected = inspectFolder(
          dir,
          `${record.lane}/${record.folder}`,
          place,
          { variant, releaseKeys: this.d.releaseKeys(), hashInstallers: true },
          SignatureCache.open(null),
          {
            verified: 0,
            cached: 0,
          },
        );
        const m = inspected.release.manifest;
        const named = new Set([variant.manifestFile, `${variant.manifestFile}.sig`, m.installer, ...feedFilesOf(m.feeds).map((f) => f.file)]);
        const extra = record.files.find((f) => !named.has(f.name));
        if (extra) throw new ReleaseProblem(`${extra.name} is not a file the manifest names`);
        if (record.halted && (m.rollout === null || !("days" in m.rollout)))
          throw new ReleaseProblem(
            "a release published halted stands at 0 % until resumed: its manifest needs a ramp, rollout { days } (release make --rollout 7d)",
          );
      } catch (e) {
        if (!(e instanceof ReleaseProblem)) throw e;
        this.staging.remove(id);
        throw new KeyturnError("release_invalid", `Not published: ${sentence(e.message)}`);
      }
      const m = inspected.release.manifest;
      const lane = laneName(m.product, m.channel, m.platform);
      const same = this.folderWithVersion(record.lane, m.version);
      if (same !== null) {
        this.staging.remove(id);
        throw new KeyturnError("release_exists", `${lane} has a release ${m.version} already (folder ${same}); a version is published once.`);
      }
      this.refuseExisting(record.lane, record.folder, () => this.staging.remove(id));
      // Before anything is recorded: a tree the site cannot write to (a read-only mount, a service
      // sandbox) would leave an audit line and a halt for a release that is not there.
      this.requireWritableLane(record.lane);

      const ref = newId("ref", this.d.clock());
      const audit = { ...this.auditLine(caller, "release-publish"), ref };
      if (record.halted) {
        // Halted at its `released` time, a ramp stands at 0 % (release-controls.ts, thresholdNow) until a person resumes it.
        await this.d.store.applyReleaseControl({ lane, version: m.version }, "halt", m.released, {
          audit,
          event: () => newEvent("release.halted", { release: { lane, version: m.version }, share: 0 }, this.d.clock()),
        });
      } else await this.d.store.writeAudit(audit);
      this.moveIntoTree(id, record);
      this.staging.remove(id);
      const index = await this.d.rescan();
      const isLive = index.releasesOf(m.product, m.channel, m.platform).some((r) => r.folder === `${record.lane}/${record.folder}`);
      return { release: { lane, version: m.version, folder: record.folder }, halted: record.halted, live: isLive, ref };
    } finally {
      this.busy.delete(id);
    }
  }

  /** Removes the uploads not written to within the expiry (called at start and with every new upload). */
  sweep(now = this.d.clock()): number {
    let removed = 0;
    for (const name of this.staging.ids()) {
      const record = this.staging.read(name);
      if (record && now - record.touched < UPLOAD_LIMITS.expiryMs) continue;
      if (this.inUse(name)) continue;
      this.staging.remove(name);
      removed++;
    }
    return removed;
  }

  /** Whether a request of this process is writing one of the upload's files, or publishing it. */
  private inUse(id: string): boolean {
    for (const key of this.busy) if (key === id || key.startsWith(`${id}/`)) return true;
    return false;
  }

  private requireWritableLane(lane: string): void {
    const laneDir = join(this.d.releasesRoot, ...lane.split("/"));
    try {
      // The lane's folders this makes are readable as the tree is, whatever the service's umask.
      const first = mkdirSync(laneDir, { recursive: true });
      if (first !== undefined) for (let dir = laneDir; dir.length >= first.length; dir = dirname(dir)) chmodSync(dir, 0o755);
      accessSync(laneDir, constants.W_OK);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code ?? String(e);
      throw new KeyturnError(
        "unavailable",
        `The release tree cannot be written to by the site (${code} at ${lane}): make it writable to keyturn's user (with deploy/keyturn.service, ReadWritePaths), then publish again.`,
      );
    }
  }

  private moveIntoTree(id: string, record: UploadRecord): void {
    const laneDir = join(this.d.releasesRoot, ...record.lane.split("/"));
    const target = join(laneDir, record.folder);
    mkdirSync(laneDir, { recursive: true });
    const from = this.staging.filesOf(id);
    try {
      renameSync(from, target);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EXDEV") throw e;
      // The data directory is on another filesystem: copy beside the target under a hidden name (the
      // scan ignores it), then rename within the tree's filesystem.
      const aside = join(laneDir, `.upload-${id}`);
      rmSync(aside, { recursive: true, force: true });
      try {
        cpSync(from, aside, { recursive: true });
        renameSync(aside, target);
      } catch (copyError) {
        rmSync(aside, { recursive: true, force: true });
        throw copyError;
      }
    }
    readableAsPublished(
      target,
      record.files.map((f) => f.name),
    );
  }

  /**
   * The folder of the lane whose release has this version: live in the index, or in the tree and
   * not yet live (its installer still being verified, or skipped), whose manifest says it.
   */
  private folderWithVersion(lane: string, version: string): string | null {
    const place = placeOfLane(this.d.variant, lane)!;
    const live = this.d
      .index()
      ?.releasesOf(place.product, place.channel, place.platform)
      .find((r) => r.manifest.version === version);
    if (live) return live.folder;
    const laneDir = join(this.d.releasesRoot, ...lane.split("/"));
    let folders: string[] = [];
    try {
      folders = readdirSync(laneDir).filter((n) => !n.startsWith("."));
    } catch {
      return null;
    }
    for (const folder of folders) {
      try {
        const said = JSON.parse(readRegularFile(join(laneDir, folder, this.d.variant.manifestFile), "manifest", MAX_MANIFEST_BYTES).toString("utf8"));
        if (said?.version === version) return `${lane}/${folder}`;
      } catch {
        // Not a release folder (or not one that reads): the scan reports it; it holds no version.
      }
    }
    return null;
  }

  /** A folder that exists in the tree is never written over (rename would replace an empty one). */
  private refuseExisting(lane: string, folder: string, before?: () => void): void {
    if (existsSync(join(this.d.releasesRoot, ...lane.split("/"), folder))) {
      before?.();
      throw new KeyturnError("release_exists", `${lane}/${folder} exists in the release tree already; a release folder is never rewritten.`);
    }
  }

  private available(): void {
    if (this.d.mirror) throw new KeyturnError("unavailable", "A mirror serves its vendor's release tree; publish releases to the vendor's site.");
    if (this.d.releaseKeys().size === 0)
      throw new KeyturnError(
        "unavailable",
        `The site has no ${this.d.variant.name}-release-*.pub.pem in its keys directory to check signatures with; uploads need one.`,
      );
  }

  private auditLine(caller: AdminCaller, action: AuditAction): AuditRecord {
    const now = this.d.clock();
    return {
      ref: newId("ref", now),
      time: now,
      address: caller.address,
      action,
      activationId: null,
      licenseId: null,
      outcome: "ok",
      error: null,
      actor: actorOf(caller.principal),
    };
  }

  private load(id: string): UploadRecord {
    const record = this.staging.read(id);
    if (!record) throw notFound();
    if (this.d.clock() - record.touched >= UPLOAD_LIMITS.expiryMs && !this.inUse(id)) {
      this.staging.remove(id);
      throw notFound();
    }
    return record;
  }
}

function invalid(message: string): KeyturnError {
  return new KeyturnError("invalid_request", message);
}

/** A check's reason as the end of a sentence (the scan's reasons have neither capital nor period). */
function sentence(reason: string): string {
  return `${reason}.`;
}

/**
 * Staged privately (0700, and the service's umask), a release is published readable: what the site
 * serves to every entitled installation, and what a mirror's rsync copies as another user. Only the
 * folder and its listed files, each opened without following a link.
 */
function readableAsPublished(folder: string, names: readonly string[]): void {
  if (!lstatSync(folder).isDirectory()) throw new Error(`${folder} is not a directory`);
  chmodSync(folder, 0o755);
  for (const name of names) {
    const fd = openSync(join(folder, name), constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      fchmodSync(fd, 0o644);
    } finally {
      closeSync(fd);
    }
  }
}
