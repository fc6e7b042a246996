import { closeSync, openSync, readSync } from "node:fs";
import { KeyturnError } from "../domain/errors";

/**
 * Conditional and range requests for the update files, written out rather than left to the
 * runtime: every rule below is pinned by a test (RFC 9110 sections 13 and 14).
 */
const CACHE_CONTROL = "private, no-cache";

/** If-None-Match: any listed tag (weak comparison, so W/ prefixes match) or `*`. */
export function matchesIfNoneMatch(request: Request, etag: string): boolean {
  const header = request.headers.get("if-none-match");
  if (header === null) return false;
  const tags = header.split(",").map((t) => t.trim().replace(/^W\//, ""));
  return tags.includes("*") || tags.includes(etag);
}

function notModified(etag: string): Response {
  return new Response(null, { status: 304, headers: { etag, "cache-control": CACHE_CONTROL } });
}

/** A small body held in memory (manifest, signature): exactly these bytes, with ETag and 304. */
export function serveBytes(request: Request, bytes: Uint8Array, etag: string, contentType: string): Response {
  if (matchesIfNoneMatch(request, etag)) return notModified(etag);
  // Ranges are not offered for these small bodies: "none" says so (RFC 9110 14.3).
  return new Response(bytes, {
    status: 200,
    headers: { "content-type": contentType, etag, "cache-control": CACHE_CONTROL, "accept-ranges": "none" },
  });
}

export type ByteRange = { readonly start: number; readonly end: number };

/**
 * The one range a `Range` header asks for, within a body of `size` bytes:
 * - a range (`a-b`, `a-`, `-n`) clipped to the body;
 * - "unsatisfiable" when it starts at or past the end (or asks for the last 0 bytes);
 * - null when the whole body is to be sent: no header, another unit, a malformed or reversed
 *   range, or several ranges (answered whole rather than as multipart).
 */
export function parseRange(header: string | null, size: number): ByteRange | "unsatisfiable" | null {
  if (header === null) return null;
  const m = /^\s*bytes\s*=\s*(.*)$/i.exec(header);
  if (!m) return null;
  const specs = m[1]!.split(",");
  if (specs.length !== 1) return null;
  const spec = /^\s*(\d*)\s*-\s*(\d*)\s*$/.exec(specs[0]!);
  if (!spec || (spec[1] === "" && spec[2] === "")) return null;
  if (spec[1] === "") {
    const suffix = Number(spec[2]);
    if (suffix === 0 || size === 0) return "unsatisfiable";
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(spec[1]);
  if (spec[2] !== "" && Number(spec[2]) < start) return null;
  if (start >= size) return "unsatisfiable";
  return { start, end: spec[2] === "" ? size - 1 : Math.min(Number(spec[2]), size - 1) };
}

/** If-Range holds only for our exact strong ETag; a date or any other tag means "send it whole". */
function ifRangeAllows(request: Request, etag: string): boolean {
  const header = request.headers.get("if-range");
  return header === null || header.trim() === etag;
}

/**
 * A file on disk, streamed (Bun.file: never read whole into memory), with ETag, 304, ranges,
 * If-Range and Content-Disposition: attachment. `size` is the size the file must have.
 */
export function serveFile(request: Request, path: string, size: number, etag: string, filename: string): Response {
  return sendFile(request, path, size, etag, filename, ifRangeAllows(request, etag) ? parseRange(request.headers.get("range"), size) : null);
}

/** The whole file (range null), one range, or the refusal of an unsatisfiable one. */
function sendFile(request: Request, path: string, size: number, etag: string, filename: string, range: ByteRange | "unsatisfiable" | null): Response {
  if (matchesIfNoneMatch(request, etag)) return notModified(etag);
  const headers: Record<string, string> = {
    "content-type": "application/octet-stream",
    "content-disposition": `attachment; filename="${filename}"`,
    "accept-ranges": "bytes",
    etag,
    "cache-control": CACHE_CONTROL,
  };
  const file = Bun.file(path);
  if (range === "unsatisfiable") {
    const refusal = new KeyturnError("range_not_satisfiable", `The range is outside the file's ${size} bytes.`);
    refusal.headers = { "content-range": `bytes */${size}`, "accept-ranges": "bytes", etag };
    throw refusal;
  }
  if (range === null) return new Response(file, { status: 200, headers: { ...headers, "content-length": String(size) } });
  headers["content-range"] = `bytes ${range.start}-${range.end}/${size}`;
  headers["content-length"] = String(range.end - range.start + 1);
  return new Response(file.slice(range.start, range.end + 1), { status: 206, headers });
}

/** electron-updater asks for at most 1000 ranges in one request (peers.md 1.5); a longer list is answered whole. */
export const MAX_RANGES = 1000;

/**
 * Every range a `Range` header asks for, in the order asked (the feeds' installers):
 * - the ranges, each clipped to the body, when all are well-formed and none overlaps another;
 * - "unsatisfiable" when one starts at or past the end (or asks for the last 0 bytes): the list
 *   names bytes the file does not have;
 * - null when the whole body is to be sent: no header, another unit, a malformed or reversed
 *   range, more than MAX_RANGES, or ranges that overlap (RFC 9110 14.2 lets a server ignore them;
 *   answering them would let one request multiply the file a thousandfold).
 */
export function parseRanges(header: string | null, size: number): ByteRange[] | "unsatisfiable" | null {
  if (header === null) return null;
  const m = /^\s*bytes\s*=\s*(.*)$/i.exec(header);
  if (!m) return null;
  const specs = m[1]!.split(",");
  if (specs.length > MAX_RANGES) return null;
  const ranges: ByteRange[] = [];
  let unsatisfiable = false;
  for (const text of specs) {
    const spec = /^\s*(\d*)\s*-\s*(\d*)\s*$/.exec(text);
    if (!spec || (spec[1] === "" && spec[2] === "")) return null;
    if (spec[1] === "") {
      const suffix = Number(spec[2]);
      if (suffix === 0 || size === 0) unsatisfiable = true;
      else ranges.push({ start: Math.max(0, size - suffix), end: size - 1 });
      continue;
    }
    const start = Number(spec[1]);
    if (spec[2] !== "" && Number(spec[2]) < start) return null;
    if (start >= size) unsatisfiable = true;
    else ranges.push({ start, end: spec[2] === "" ? size - 1 : Math.min(Number(spec[2]), size - 1) });
  }
  if (unsatisfiable) return "unsatisfiable";
  const sorted = [...ranges].sort((a, b) => a.start - b.start);
  for (let i = 1; i < sorted.length; i++) if (sorted[i]!.start <= sorted[i - 1]!.end) return null;
  return ranges;
}

/** What one multipart read step reads at most from the file. */
const PART_CHUNK = 256 << 10;

/**
 * Like serveFile, and a request for several ranges is answered 206 `multipart/byteranges` as
 * electron-updater's differential downloader parses it (peers.md 1.5): the body starts with the
 * boundary, one part per range in the order asked, each exactly the bytes asked, none coalesced.
 */
export function serveFileRanges(request: Request, path: string, size: number, etag: string, filename: string): Response {
  const ranges = ifRangeAllows(request, etag) ? parseRanges(request.headers.get("range"), size) : null;
  if (ranges === null || ranges === "unsatisfiable" || ranges.length === 1)
    return sendFile(request, path, size, etag, filename, ranges === null || ranges === "unsatisfiable" ? ranges : ranges[0]!);
  if (matchesIfNoneMatch(request, etag)) return notModified(etag);
  // The same for the same file and ranges (so HEAD and GET agree); 128 bits no installer can be made to contain.
  const boundary = new Bun.CryptoHasher("sha256")
    .update(`${etag}\n${ranges.map((r) => `${r.start}-${r.end}`).join(",")}`)
    .digest("hex")
    .slice(0, 32);
  const encoder = new TextEncoder();
  const heads = ranges.map((r, i) =>
    encoder.encode(
      `${i === 0 ? "" : "\r\n"}--${boundary}\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes ${r.start}-${r.end}/${size}\r\n\r\n`,
    ),
  );
  const tail = encoder.encode(`\r\n--${boundary}--\r\n`);
  const length = heads.reduce((n, h, i) => n + h.length + ranges[i]!.end - ranges[i]!.start + 1, tail.length);
  // Read with pread on one descriptor, a step of at most PART_CHUNK bytes at a time: a read per
  // part through Bun.file cost about 40 µs each (1000 small parts: 40 ms; this way about 4 ms).
  let fd: number | null = null;
  let part = 0;
  let at = -1;
  const close = () => {
    if (fd !== null) closeSync(fd);
    fd = null;
  };
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      try {
        fd ??= openSync(path, "r");
        const chunks: Uint8Array[] = [];
        let budget = PART_CHUNK;
        while (budget > 0 && part < ranges.length) {
          const r = ranges[part]!;
          if (at < 0) {
            chunks.push(heads[part]!);
            at = r.start;
          }
          const bytes = Buffer.allocUnsafe(Math.min(budget, r.end + 1 - at));
          for (let read = 0; read < bytes.length; ) {
            const n = readSync(fd, bytes, read, bytes.length - read, at + read);
            if (n === 0) throw new Error("the file is shorter than it was verified to be");
            read += n;
          }
          chunks.push(bytes);
          at += bytes.length;
          budget -= bytes.length;
          if (at > r.end) {
            part++;
            at = -1;
          }
        }
        if (part === ranges.length) chunks.push(tail);
        controller.enqueue(Buffer.concat(chunks));
        if (part === ranges.length) {
          close();
          controller.close();
        }
      } catch (e) {
        close();
        controller.error(e);
      }
    },
    cancel: close,
  });
  return new Response(body, {
    status: 206,
    headers: {
      "content-type": `multipart/byteranges; boundary=${boundary}`,
      "content-length": String(length),
      "accept-ranges": "bytes",
      etag,
      "cache-control": CACHE_CONTROL,
    },
  });
}
