import { afterEach, describe, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import { copyFileSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import tls from "node:tls";
import { HSTS, startTransport, type Transport } from "../../src/cli/transport";
import { createLogger, silentLogger } from "../../src/config/log";
import { device, tempDir, testSite, type TestSite } from "../helpers";
import { makeCertificate, startServe, type ServeProcess } from "../serve-process";

// Issue: "--tls-cert/--tls-key: keyturn serves HTTPS itself (a certificate renewed on disk is picked
// up on SIGHUP without dropping connections), with HSTS. Without them it binds loopback only".

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** "<protocol> <cipher>" that `openssl s_client` with `args` agrees with the server on, or null when the handshake fails. */
async function handshake(port: number, args: string[]): Promise<string | null> {
  const p = Bun.spawn(["openssl", "s_client", "-connect", `127.0.0.1:${port}`, "-servername", "localhost", ...args], {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  const m = /^New, (\S+), Cipher is (\S+)$/m.exec(out);
  return m && m[2] !== "(NONE)" ? `${/^\s*Protocol\s*: (\S+)$/m.exec(out)?.[1] ?? m[1]} ${m[2]}` : null;
}

/** The CN of the certificate a new TLS connection to `port` is shown. */
function certificateCN(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: "127.0.0.1", port, servername: "localhost", rejectUnauthorized: false }, () => {
      resolve(String(socket.getPeerCertificate().subject.CN));
      socket.end();
    });
    socket.on("error", reject);
  });
}

/**
 * An activation request whose body is held back: the request is in flight (headers read, the
 * handler waiting for the body) until `finish()` sends the rest. Resolves with the raw answer.
 */
function slowActivate(connect: () => net.Socket) {
  const body = JSON.stringify({ key: "GA-00000-00000-00000-00000-00000", device: device("gamma") });
  const socket = connect();
  let answer = "";
  socket.on("data", (d) => (answer += d));
  const closed = new Promise<string>((resolve) => socket.on("close", () => resolve(answer)));
  socket.on("error", () => {});
  const sent = new Promise<void>((resolve) =>
    socket.once(socket instanceof tls.TLSSocket ? "secureConnect" : "connect", () => {
      socket.write(
        `POST /api/v1/licenses/activate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body.slice(0, 10)}`,
      );
      resolve();
    }),
  );
  return { sent, finish: () => socket.write(body.slice(10)), answer: closed };
}

async function tlsSite() {
  const site: TestSite = await testSite("gamma");
  cleanups.push(() => site.close());
  const dir = tempDir("keyturn-tls-");
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const a = makeCertificate(dir, "a", "keyturn-a");
  const live = { cert: join(dir, "live.crt"), key: join(dir, "live.key") };
  copyFileSync(a.cert, live.cert);
  copyFileSync(a.key, live.key);
  const lines: string[] = [];
  const transport: Transport = startTransport(
    { ...site.composed.config, port: 0, tls: { certFile: live.cert, keyFile: live.key } },
    (request) => site.app.handle(request),
    createLogger("json", "info", (l) => lines.push(l)),
  );
  cleanups.push(() => void transport.stop(1000));
  return { site, dir, live, transport, lines, port: Number(new URL(transport.url).port), ca: readFileSync(a.cert, "utf8") };
}

describe("HTTPS", () => {
  test("serves TLS with the given certificate, verified against it, with HSTS on every answer", async () => {
    const { transport, ca } = await tlsSite();
    expect(transport.url).toStartWith("https://127.0.0.1:");
    const port = new URL(transport.url).port;
    for (const path of ["/api/v1/meta", "/api/v1/nothing", "/api/v1/entitlements/current"]) {
      const r = await fetch(`https://localhost:${port}${path}`, { tls: { ca } });
      expect(r.headers.get("strict-transport-security")).toBe(HSTS);
    }
    // Verification is real: another certificate's CA is refused.
    const otherDir = tempDir("keyturn-other-");
    cleanups.push(() => rmSync(otherDir, { recursive: true, force: true }));
    const other = makeCertificate(otherDir, "other");
    await expect(fetch(`https://localhost:${port}/api/v1/meta`, { tls: { ca: readFileSync(other.cert, "utf8") } })).rejects.toThrow();
  });

  test("TLS 1.2 offers only ECDHE with AES-GCM or ChaCha20 (no CBC-SHA1), TLS 1.3 is accepted, TLS 1.1 is not", async () => {
    // Issue 13, item 8: "TLS offers CBC-SHA1 suites".
    const { port, transport, dir, live } = await tlsSite();
    const refused = ["ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA", "ECDHE-ECDSA-AES128-SHA256", "AES128-SHA", "AES128-GCM-SHA256"];
    const accepted = ["ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305"];
    const expectSuites = async () => {
      const [no, yes, v13, v11] = await Promise.all([
        Promise.all(refused.map((c) => handshake(port, ["-tls1_2", "-cipher", c]))),
        Promise.all(accepted.map((c) => handshake(port, ["-tls1_2", "-cipher", c]))),
        handshake(port, ["-tls1_3"]),
        handshake(port, ["-tls1_1", "-cipher", "ALL@SECLEVEL=0"]),
      ]);
      expect(no).toEqual(refused.map(() => null));
      expect(yes).toEqual(accepted.map((c) => `TLSv1.2 ${c}`));
      expect(v13).toStartWith("TLSv1.3 TLS_");
      expect(v11).toBeNull();
    };
    await expectSuites();
    // A reloaded certificate is served with the same suites.
    const b = makeCertificate(dir, "b", "keyturn-b");
    copyFileSync(b.cert, live.cert);
    copyFileSync(b.key, live.key);
    expect(await transport.reloadTls()).toBe(true);
    await expectSuites();
  });

  test("with an RSA certificate: ECDHE-RSA with GCM, never its CBC suites", async () => {
    const site = await testSite("gamma");
    cleanups.push(() => site.close());
    const dir = tempDir("keyturn-rsa-");
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const cert = join(dir, "rsa.crt");
    const key = join(dir, "rsa.key");
    execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost"], {
      stdio: "ignore",
    });
    const transport = startTransport({ ...site.composed.config, port: 0, tls: { certFile: cert, keyFile: key } }, (r) => site.app.handle(r), silentLogger);
    cleanups.push(() => void transport.stop(1000));
    const port = Number(new URL(transport.url).port);
    for (const cbc of ["ECDHE-RSA-AES128-SHA", "ECDHE-RSA-AES256-SHA", "AES128-SHA", "AES256-GCM-SHA384"])
      expect(await handshake(port, ["-tls1_2", "-cipher", cbc])).toBeNull();
    expect(await handshake(port, ["-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"])).toBe("TLSv1.2 ECDHE-RSA-AES128-GCM-SHA256");
    expect(await handshake(port, ["-tls1_2", "-cipher", "ECDHE-RSA-CHACHA20-POLY1305"])).toBe("TLSv1.2 ECDHE-RSA-CHACHA20-POLY1305");
    expect(await handshake(port, ["-tls1_3"])).toStartWith("TLSv1.3 TLS_");
  });

  test("plain HTTP carries no HSTS", async () => {
    const site = await testSite("gamma");
    cleanups.push(() => site.close());
    const transport = startTransport({ ...site.composed.config, port: 0 }, (r) => site.app.handle(r), silentLogger);
    cleanups.push(() => void transport.stop(1000));
    const r = await fetch(`${transport.url}/api/v1/meta`);
    expect(r.status).toBe(200);
    expect(r.headers.get("strict-transport-security")).toBeNull();
  });

  test("a renewed certificate is served to new connections; a request in flight on the old one finishes", async () => {
    const { dir, live, transport, port, lines } = await tlsSite();
    expect(await certificateCN(port)).toBe("keyturn-a");
    const inFlight = slowActivate(() => tls.connect({ host: "127.0.0.1", port, servername: "localhost", rejectUnauthorized: false }));
    await inFlight.sent;
    await Bun.sleep(50);

    const b = makeCertificate(dir, "b", "keyturn-b");
    copyFileSync(b.cert, live.cert);
    copyFileSync(b.key, live.key);
    expect(await transport.reloadTls()).toBe(true);
    expect(await certificateCN(port)).toBe("keyturn-b");
    const fresh = await fetch(`https://localhost:${port}/api/v1/meta`, { tls: { ca: readFileSync(b.cert, "utf8") } });
    expect(fresh.status).toBe(200);

    inFlight.finish();
    const answer = await inFlight.answer;
    expect(answer).toStartWith("HTTP/1.1 403");
    expect(answer).toContain('"error":"license_unknown"');
    expect(lines.some((l) => l.includes("TLS certificate reloaded"))).toBe(true);
  });

  test("a broken renewal keeps the previous certificate in service", async () => {
    const { dir, live, transport, port, lines } = await tlsSite();
    // Half a renewal: the new certificate beside the old key.
    copyFileSync(makeCertificate(dir, "b", "keyturn-b").cert, live.cert);
    expect(await transport.reloadTls()).toBe(false);
    expect(await certificateCN(port)).toBe("keyturn-a");
    writeFileSync(live.cert, "-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n");
    expect(await transport.reloadTls()).toBe(false);
    expect(await certificateCN(port)).toBe("keyturn-a");
    expect(lines.some((l) => l.includes("TLS reload failed"))).toBe(true);
  });
});

describe("keyturn serve (a real process)", () => {
  let server: ServeProcess | null = null;
  afterEach(async () => {
    await server?.cleanup();
    server = null;
  });

  test("SIGHUP picks up a renewed certificate while the process keeps running", async () => {
    const dir = tempDir("keyturn-serve-");
    const a = makeCertificate(dir, "a", "keyturn-a");
    const live = { cert: join(dir, "live.crt"), key: join(dir, "live.key") };
    copyFileSync(a.cert, live.cert);
    copyFileSync(a.key, live.key);
    server = await startServe("gamma", ["--tls-cert", live.cert, "--tls-key", live.key], dir);
    expect(await server.waitFor("transport")).toMatchObject({ mode: "https" });
    const port = Number(new URL(server.url).port);
    expect(server.url).toStartWith("https://");
    expect(await certificateCN(port)).toBe("keyturn-a");

    const b = makeCertificate(dir, "b", "keyturn-b");
    copyFileSync(b.cert, live.cert);
    copyFileSync(b.key, live.key);
    server.proc.kill("SIGHUP");
    await server.waitFor("TLS certificate reloaded");
    expect(await certificateCN(port)).toBe("keyturn-b");
    const r = await fetch(`https://localhost:${port}/api/v1/health`, { tls: { ca: readFileSync(b.cert, "utf8") } });
    expect(r.status).toBe(200);
    expect(r.headers.get("strict-transport-security")).toBe(HSTS);
    expect(server.proc.exitCode).toBeNull();
  });

  test("without TLS it says it listens on loopback only, and why", async () => {
    server = await startServe("gamma");
    expect(server.url).toStartWith("http://127.0.0.1:");
    expect(await server.waitFor("transport")).toMatchObject({ mode: "http-loopback", why: expect.stringContaining("loopback") });
  });

  test("SIGTERM: no new connections, the request in flight finishes, then exit 0", async () => {
    server = await startServe("gamma");
    const port = Number(new URL(server.url).port);
    const inFlight = slowActivate(() => net.connect(port, "127.0.0.1"));
    await inFlight.sent;
    await Bun.sleep(100);
    server.proc.kill("SIGTERM");
    await server.waitFor("shutting down: no new connections, finishing requests in flight");
    await Bun.sleep(50);
    await expect(fetch(`${server.url}/api/v1/health`)).rejects.toThrow();
    expect(server.proc.exitCode).toBeNull();

    inFlight.finish();
    const answer = await inFlight.answer;
    expect(answer).toStartWith("HTTP/1.1 403");
    expect(answer).toContain('"error":"license_unknown"');
    expect(await server.proc.exited).toBe(0);
    const msgs = server.lines.map((l) => JSON.parse(l).msg as string);
    expect(msgs.indexOf("stopped")).toBeGreaterThan(msgs.lastIndexOf("request"));
    expect(server.lines.some((l) => l.includes("shutdown timeout"))).toBe(false);
  });

  test("a request that never finishes is cut off after --shutdown-timeout, and the exit is still 0", async () => {
    server = await startServe("gamma", ["--shutdown-timeout", "1s"]);
    const port = Number(new URL(server.url).port);
    const stuck = slowActivate(() => net.connect(port, "127.0.0.1"));
    await stuck.sent;
    await Bun.sleep(100);
    server.proc.kill("SIGINT");
    // The stuck request never ends of itself: the exit is the cut-off's doing, which the log says.
    expect(await server.proc.exited).toBe(0);
    expect(server.lines.some((l) => l.includes("shutdown timeout"))).toBe(true);
  });
});
