/**
 * The runtime's own floors, pinned to the server core like keyturn and nginx, answering every
 * request with the same manifest bytes from memory:
 * - `bare`: no routing, no auth, no log. No program on Bun.serve can answer faster.
 * - `io`: only the per-request I/O that every keyturn answer has whatever keyturn's code does: the
 *   peer address, the URL, method and Authorization header read, keyturn's five response headers
 *   (cache-control, content-type, etag, and the two RateLimit headers with a count), an async
 *   handler, and keyturn's JSON log line written as keyturn's logger writes it (one write per
 *   event-loop turn). What keyturn spends beyond this floor is its own checks: the rate-limit count,
 *   the token, the revocation read, the lane lookup.
 * keyturn's ratio to these is what keyturn's own work costs.
 */
import { startPinnedServer } from "./tools";

export type FloorKind = "bare" | "io";

const SERVER = `
import { writeSync } from "node:fs";
const [kind, file, port] = process.argv.slice(1);
const body = new Uint8Array(await Bun.file(file).arrayBuffer());
const etag = '"' + new Bun.CryptoHasher("sha256").update(body).digest("hex") + '"';
let pending = [];
const flush = () => { const bytes = Buffer.from(pending.join("")); pending = []; for (let w = 0; w < bytes.length; ) w += writeSync(2, bytes, w); };
const log = (fields) => { if (pending.push(JSON.stringify({ time: new Date().toISOString(), level: "info", msg: "request", ...fields }) + "\\n") === 1) setImmediate(flush); };
let remaining = 1e9;
const bare = () => new Response(body, { headers: { "content-type": "application/json" } });
const io = async (request, server) => {
  const start = performance.now();
  const address = server.requestIP(request)?.address ?? null;
  const url = request.url;
  const method = request.method;
  if (!request.headers.get("authorization")) return new Response(null, { status: 401 });
  const response = await (async () => new Response(body, { headers: {
    "cache-control": "private, no-cache", "content-type": "application/json", etag,
    ratelimit: '"api";r=' + --remaining + ";t=1", "ratelimit-policy": '"api";q=1000000000;w=1',
  } }))();
  const pathStart = url.indexOf("/", url.indexOf("//") + 2);
  log({ address, method, path: url.slice(pathStart), status: response.status, ms: Math.round((performance.now() - start) * 10) / 10 });
  return response;
};
Bun.serve({ hostname: "127.0.0.1", port: Number(port), fetch: kind === "io" ? io : bare });
console.log("ready");
`;

/** Starts a floor server; `io` logs to `logFile` (as keyturn's log goes to a file in the bench). */
export async function startBunFloor(file: string, port: number, kind: FloorKind = "bare", logFile = "/dev/null") {
  return startPinnedServer(`the Bun.serve ${kind} floor`, [process.execPath, "-e", SERVER, kind, file, String(port)], port, Bun.file(logFile));
}
