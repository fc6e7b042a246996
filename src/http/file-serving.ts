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
  if (matchesIfNoneMatch(request, etag)) return notModified(etag);
  const headers: Record<string, string> = {
    "content-type": "application/octet-stream",
    "content-disposition": `attachment; filename="${filename}"`,
    "accept-ranges": "bytes",
    etag,
    "cache-control": CACHE_CONTROL,
  };
  const file = Bun.file(path);
  const range = ifRangeAllows(request, etag) ? parseRange(request.headers.get("range"), size) : null;
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
