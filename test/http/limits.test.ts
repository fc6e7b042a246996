import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import net from "node:net";
import { startTransport, type Transport } from "../../src/cli/transport";
import { silentLogger } from "../../src/config/log";
import { MAX_JSON_BODY } from "../../src/http/body";
import { MAX_URL_BYTES } from "../../src/http/front-door";
import { device, testSite, type TestSite } from "../helpers";

// design.md: "413 payload_too_large (JSON bodies over 16 KiB)". Issue: "header and URL sizes,
// request timeouts against slow clients".

let site: TestSite;
let transport: Transport;
let port: number;

beforeAll(async () => {
  site = await testSite("gamma", { settings: { "idle-timeout": "1s" } });
  transport = startTransport({ ...site.composed.config, port: 0 }, (request) => site.app.handle(request), silentLogger);
  port = Number(new URL(transport.url).port);
});
afterAll(async () => {
  await transport.stop(1000);
  await site.close();
});

/** Sends raw bytes, returns what the server answered before the connection closed, and who closed it (the client after `holdOpenMs`). */
function raw(text: string, opts: { holdOpenMs?: number } = {}): Promise<{ head: string; body: string; closedBy: "server" | "client" }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1", () => socket.write(text));
    let buf = "";
    let closedBy: "server" | "client" = "server";
    const done = () => {
      clearTimeout(giveUp);
      const [head = "", body = ""] = buf.split("\r\n\r\n");
      resolve({ head, body, closedBy });
    };
    socket.on("data", (d) => (buf += d));
    socket.on("close", done);
    socket.on("error", () => {});
    const giveUp = setTimeout(() => {
      closedBy = "client";
      socket.destroy();
    }, opts.holdOpenMs ?? 5000);
  });
}

describe("size limits", () => {
  test("a path and query over 8 KiB: 400 with the error body", async () => {
    const long = await site.request("GET", `/meta?pad=${"a".repeat(MAX_URL_BYTES)}`);
    expect(long.status).toBe(400);
    expect(await long.json()).toMatchObject({ ok: false, error: "invalid_request", message: "The path and query are limited to 8192 bytes." });
    expect((await site.request("GET", `/meta?pad=${"a".repeat(MAX_URL_BYTES - 20)}`)).status).toBe(200);
  });

  test("JSON bodies over 16 KiB: 413 payload_too_large, declared or streamed", async () => {
    const big = JSON.stringify({ key: "k".repeat(MAX_JSON_BODY), device: device("gamma") });
    const declared = await site.request("POST", "/licenses/activate", { body: big });
    expect(declared.status).toBe(413);
    expect(await declared.json()).toMatchObject({ error: "payload_too_large" });
    // Streamed without a length: refused once 16 KiB have arrived, without reading the rest.
    let pulled = 0;
    const stream = new ReadableStream({
      pull(c) {
        pulled += 4096;
        c.enqueue(new Uint8Array(4096).fill(32));
      },
    });
    const r = await site.app.handle(
      new Request("http://localhost/api/v1/licenses/activate", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: stream,
        duplex: "half",
      } as RequestInit),
    );
    expect(r.status).toBe(413);
    expect(pulled).toBeLessThan(MAX_JSON_BODY + 3 * 4096);
  });

  test("console and portal forms over 32 KiB: 413, declared or streamed, before anyone signs in", async () => {
    const origin = new URL(site.composed.config.baseUrl).origin;
    const form = (body: string | ReadableStream) =>
      new Request(`${origin}/portal/sign-out`, {
        method: "POST",
        headers: { origin, "content-type": "application/x-www-form-urlencoded" },
        body,
        duplex: "half",
      } as RequestInit);
    expect((await site.app.handle(form(`pad=${"a".repeat(32 * 1024)}`))).status).toBe(413);
    // Chunked (no Content-Length): counted as it arrives, and the rest of an endless body is never read.
    let pulled = 0;
    const endless = new ReadableStream({
      pull(c) {
        pulled += 4096;
        c.enqueue(new Uint8Array(4096).fill(97));
      },
    });
    const streamed = await site.app.handle(form(endless));
    expect(streamed.status).toBe(413);
    expect(await streamed.text()).toContain("A form is at most 32 KiB.");
    expect(pulled).toBeLessThan(32 * 1024 + 3 * 4096);
  });

  test("over the socket: the same 413 error body, and the runtime's own limits beyond", async () => {
    const body = "x".repeat(MAX_JSON_BODY + 1);
    const over = await raw(
      `POST /api/v1/licenses/activate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
    expect(over.head).toStartWith("HTTP/1.1 413");
    expect(JSON.parse(over.body)).toMatchObject({ ok: false, error: "payload_too_large" });
    // A 100 KB declared body still gets keyturn's own answer, without being read…
    const large = await raw(
      `POST /api/v1/licenses/activate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100000\r\nConnection: close\r\n\r\n`,
    );
    expect(large.head).toStartWith("HTTP/1.1 413");
    expect(JSON.parse(large.body)).toMatchObject({ ok: false, error: "payload_too_large" });
    // …and beyond 8 MiB declared, Bun refuses before keyturn sees the request.
    const absurd = await raw(
      `POST /api/v1/licenses/activate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n`,
    );
    expect(absurd.head).toStartWith("HTTP/1.1 413");
    // Request line and headers together over 16 KiB: Bun answers 431 itself.
    const headers = await raw(`GET /api/v1/meta HTTP/1.1\r\nHost: localhost\r\nX-Pad: ${"p".repeat(20_000)}\r\nConnection: close\r\n\r\n`);
    expect(headers.head).toStartWith("HTTP/1.1 431");
  });
});

describe("slow clients", () => {
  // Bun checks idle timeouts every few seconds; this test takes about 4 s with --idle-timeout 1s.
  test("a request whose body stalls is cut off after the idle timeout", async () => {
    const stalled = await raw(
      `POST /api/v1/licenses/activate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"key":`,
      { holdOpenMs: 15_000 },
    );
    // Cut off by the server's idle timeout, not by this client giving up after 15 s.
    expect(stalled.closedBy).toBe("server");
    expect(stalled.head).not.toStartWith("HTTP/1.1 200");
  });
});
