import { createHash, type Hash } from "node:crypto";
import { createReadStream } from "node:fs";
import { open, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { KeyturnClientError } from "./errors.js";
import type { Release } from "./manifest.js";
import { refusal, type Transport } from "./transport.js";

export interface DownloadProgress {
  /** Bytes of the installer on disk so far (including what an earlier attempt left). */
  readonly received: number;
  readonly total: number;
  /** Where this attempt started: the partial file's size when resumed, else 0. */
  readonly resumedFrom: number;
  /** True when a partial file was thrown away because the site sent the whole file (If-Range did not match). */
  readonly restarted: boolean;
}

export interface DownloadOptions {
  readonly token: string;
  readonly onProgress?: (p: DownloadProgress) => void;
  readonly signal?: AbortSignal;
}

export interface DownloadResult {
  readonly path: string;
  readonly sha256: string;
  readonly size: number;
  readonly resumedFrom: number;
  readonly restarted: boolean;
  /** 200 (whole file), 206 (the rest of a partial file), or 0 (a complete partial file was only checked). */
  readonly status: number;
}

/** Where a download in progress keeps its bytes and the ETag they came with. */
export const partialPaths = (file: string) => ({ part: `${file}.part`, etag: `${file}.part.etag` });

async function sizeOf(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch {
    return -1;
  }
}

async function readEtag(path: string): Promise<string | null> {
  try {
    const t = (await readFile(path, "utf8")).trim();
    return /^"[\x21\x23-\x7e]{1,200}"$/.test(t) ? t : null;
  } catch {
    return null;
  }
}

async function hashFile(path: string, hash: Hash): Promise<void> {
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
}

async function discard(part: string, etag: string): Promise<void> {
  await rm(part, { force: true });
  await rm(etag, { force: true });
}

/** The start offset and total a 206's Content-Range names, or null. */
function contentRange(res: Response): { start: number; total: number } | null {
  const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(res.headers.get("content-range") ?? "");
  return m ? { start: Number(m[1]), total: Number(m[3]) } : null;
}

/**
 * Downloads a release's installer to `file`, resuming `<file>.part` when one is there: it sends
 * `Range: bytes=<size>-` with `If-Range: <the ETag the partial bytes came with>`, so a release
 * replaced in the meantime comes back whole (200) and the partial file starts over rather than
 * being spliced onto other bytes. The SHA-256 of the whole file is checked against the manifest's
 * at the end; a mismatch deletes the file. An abort or a cut connection keeps the partial file.
 */
export async function downloadInstaller(transport: Transport, path: string, release: Release, file: string, opts: DownloadOptions): Promise<DownloadResult> {
  const { part, etag: etagFile } = partialPaths(file);
  let have = await sizeOf(part);
  let etag = await readEtag(etagFile);
  if (have > release.size || (have > 0 && etag === null)) {
    await discard(part, etagFile);
    have = -1;
    etag = null;
  }
  const resumeFrom = have > 0 && have < release.size ? have : 0;
  const complete = have === release.size && etag !== null;

  let status = 0;
  let restarted = false;
  if (!complete) {
    const headers: Record<string, string> = {};
    if (resumeFrom > 0) Object.assign(headers, { range: `bytes=${resumeFrom}-`, "if-range": etag! });
    const res = await transport.send(path, { method: "GET", token: opts.token, headers, ...(opts.signal ? { signal: opts.signal } : {}) });
    status = res.status;
    if (res.status === 206) {
      const range = contentRange(res);
      if (resumeFrom === 0 || range?.start !== resumeFrom || range.total !== release.size || res.headers.get("etag") !== etag) {
        await res.body?.cancel();
        await discard(part, etagFile);
        throw new KeyturnClientError("release_changed", "The site's partial answer does not continue the partial file; try again.", { status: 206 });
      }
    } else if (res.status === 200) {
      restarted = resumeFrom > 0;
      const length = res.headers.get("content-length");
      if (length !== null && Number(length) !== release.size) {
        await res.body?.cancel();
        await discard(part, etagFile);
        throw new KeyturnClientError(
          "release_changed",
          `The installer on the site has ${length} bytes, not the manifest's ${release.size}: check for updates again.`,
          { status: 200 },
        );
      }
      const newEtag = res.headers.get("etag");
      await writeFile(part, new Uint8Array());
      if (newEtag !== null) await writeFile(etagFile, newEtag);
      else await rm(etagFile, { force: true });
    } else {
      throw await refusal(res);
    }
    await receive(res, part, status === 206 ? resumeFrom : 0, release.size, restarted, opts);
  }

  const hash = createHash("sha256");
  await hashFile(part, hash);
  const sha256 = hash.digest("hex");
  const size = await sizeOf(part);
  if (size !== release.size) {
    if (size > release.size) await discard(part, etagFile);
    throw new KeyturnClientError(size > release.size ? "size_mismatch" : "download_incomplete", `Received ${size} of the installer's ${release.size} bytes.`, {
      status,
    });
  }
  if (sha256 !== release.sha256) {
    await discard(part, etagFile);
    throw new KeyturnClientError("sha256_mismatch", "The installer's SHA-256 is not the one in the signed manifest; the file was deleted.", { status });
  }
  await rename(part, file);
  await rm(etagFile, { force: true });
  return { path: file, sha256, size, resumedFrom: restarted ? 0 : resumeFrom, restarted, status };
}

/** Appends the answer's body to the partial file, reporting progress; an abort keeps what arrived. */
async function receive(res: Response, part: string, start: number, total: number, restarted: boolean, opts: DownloadOptions): Promise<void> {
  if (!res.body) return;
  const fh = await open(part, "a");
  let received = start;
  const reader = res.body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      if (received + value.byteLength > total) throw new KeyturnClientError("size_mismatch", `The site sent more than the manifest's ${total} bytes.`);
      await fh.write(value);
      received += value.byteLength;
      opts.onProgress?.({ received, total, resumedFrom: start, restarted });
      if (opts.signal?.aborted) throw opts.signal.reason ?? new Error("aborted");
    }
  } catch (e) {
    await reader.cancel().catch(() => {});
    if (e instanceof KeyturnClientError) throw e;
    if (opts.signal?.aborted) throw new KeyturnClientError("aborted", `The download was aborted at ${received} of ${total} bytes; it resumes from there.`);
    throw new KeyturnClientError("download_incomplete", `The connection broke at ${received} of ${total} bytes; it resumes from there.`);
  } finally {
    await fh.close();
  }
}
