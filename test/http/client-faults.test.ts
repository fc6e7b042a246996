import { afterAll, beforeAll, expect, test } from "bun:test";
import { connect } from "node:net";
import { createLogger, type Logger } from "../../src/config/log";
import { testSite, type TestSite } from "../helpers";

// Issue 13, item 7: a client dropping mid-body, bad chunk framing, a missing or invalid Host and
// CONNECT are the client's faults: 400 (or a closed connection), never internal_error, and an
// audit line that says what happened.

const logged: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
const log: Logger = createLogger("json", "debug", (line) => {
  const { level, msg, ...fields } = JSON.parse(line) as Record<string, unknown>;
  logged.push({ level: String(level), message: String(msg), fields });
});

let site: TestSite;
let port: number;
beforeAll(async () => {
  site = await testSite("alpha", { log });
  port = site.app.listen({ hostname: "127.0.0.1", port: 0 }).port!;
});
afterAll(async () => {
  await site.app.stop(true);
  await site.close();
});

/** Writes raw bytes; `abort` destroys the socket soon after instead of waiting for the answer. */
function send(bytes: string, abort = false): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("close", () => resolve(Buffer.concat(chunks).toString()));
    socket.on("error", () => resolve(Buffer.concat(chunks).toString()));
    socket.write(bytes);
    if (abort) setTimeout(() => socket.destroy(), 30);
  });
}

async function settled(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((r) => setTimeout(r, 5));
}

const ACTIVATE = "POST /api/v1/licenses/activate HTTP/1.1\r\nHost: keyturn.test\r\nContent-Type: application/json\r\n";

test("a client that closes mid-body: its audit line says invalid_request, no internal_error is logged", async () => {
  const before = (await site.composed.store.listAudit({ limit: 1000 })).length;
  await send(`${ACTIVATE}Content-Length: 100\r\n\r\n{"key":`, true);
  await settled();
  const lines = await site.composed.store.listAudit({ limit: 1000 });
  expect(lines.length).toBe(before + 1);
  expect(lines.find((l) => l.action === "activate")).toMatchObject({ outcome: "refused", error: "invalid_request" });
  expect(logged.filter((l) => l.message === "unexpected error")).toEqual([]);
});

test("bad chunk framing is answered 400 and not logged as our error", async () => {
  const answer = await send(`${ACTIVATE}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\nabc\r\n0\r\n\r\n`);
  await settled();
  expect(answer).toStartWith("HTTP/1.1 400");
  expect(logged.filter((l) => l.message === "unexpected error")).toEqual([]);
  expect(logged.some((l) => l.message === "request" && l.fields?.status === 400)).toBe(true);
  expect(logged.some((l) => l.message === "request" && l.fields?.status === 500)).toBe(false);
});

test("CONNECT and a request without Host are 400 invalid_request", async () => {
  const tunnel = await send("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nConnection: close\r\n\r\n");
  expect(tunnel).toStartWith("HTTP/1.1 400");
  expect(tunnel).toContain('"error":"invalid_request"');
  const noHost = await send("GET /api/v1/health HTTP/1.0\r\n\r\n");
  expect(noHost).toStartWith("HTTP/1.1 400");
  expect(noHost).toContain("The Host header is missing or not a valid host.");
  const badHost = await send("GET /api/v1/health HTTP/1.1\r\nHost: a b\r\nConnection: close\r\n\r\n");
  expect(badHost).toStartWith("HTTP/1.1 400");
  expect(logged.filter((l) => l.message === "unexpected error")).toEqual([]);
});
