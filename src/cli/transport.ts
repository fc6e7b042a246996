import { readFileSync } from "node:fs";
import type { Server } from "bun";
import { isLoopbackHost, type Config } from "../config/config";
import type { Logger } from "../config/log";
import { MAX_JSON_BODY } from "../http/body";

/** HSTS on every HTTPS answer: a year, this host only (the operator's other hosts are not ours to pin). */
export const HSTS = "max-age=31536000";

/**
 * The runtime refuses bodies declared larger than this with a bare 413. The app answers 413 with
 * the error body from 16 KiB on, before reading the body; this bound only stops absurd uploads
 * before the app sees them, and is high enough that clients see keyturn's own answer.
 */
const MAX_REQUEST_BODY = 512 * MAX_JSON_BODY;

/**
 * TLS 1.2 suites offered: forward secrecy (ECDHE) with an AEAD cipher (AES-GCM, ChaCha20-Poly1305),
 * for ECDSA and RSA certificates alike; no CBC (SHA-1 MACs, padding oracles), no static RSA key
 * exchange. TLS 1.3 suites are all AEAD and stay as the runtime has them; TLS 1.0 and 1.1 have none
 * of these suites, so nothing below 1.2 is negotiated.
 */
export const TLS12_CIPHERS = [
  "ECDHE-ECDSA-AES128-GCM-SHA256",
  "ECDHE-RSA-AES128-GCM-SHA256",
  "ECDHE-ECDSA-AES256-GCM-SHA384",
  "ECDHE-RSA-AES256-GCM-SHA384",
  "ECDHE-ECDSA-CHACHA20-POLY1305",
  "ECDHE-RSA-CHACHA20-POLY1305",
].join(":");

export type Handler = (request: Request, peer: string | null) => Response | Promise<Response>;

export interface Transport {
  readonly url: string;
  readonly tls: boolean;
  /** Re-reads --tls-cert and --tls-key: new connections get the new certificate, open ones carry on. */
  reloadTls(): Promise<boolean>;
  /** Stops accepting, waits for in-flight requests up to `timeoutMs`, then closes what is left. */
  stop(timeoutMs: number): Promise<{ drained: boolean }>;
}

/** How the listener was chosen, for the start-up log line. */
export function transportMode(config: Config): { mode: string; why: string } {
  if (config.tls) return { mode: "https", why: "--tls-cert and --tls-key given: keyturn terminates TLS itself" };
  if (isLoopbackHost(config.host))
    return { mode: "http-loopback", why: "no --tls-cert: plain HTTP on a loopback address only, for a TLS proxy on this machine" };
  return { mode: "http", why: `--allow-plain-http: plain HTTP on ${config.host}, for a TLS-terminating proxy in front` };
}

/**
 * Listens with Bun.serve. A renewed certificate cannot be swapped into a running Bun server
 * (server.reload() ignores tls), so reloadTls starts a second server on the same port
 * (SO_REUSEPORT) with the new certificate and then stops the old one gracefully: new connections
 * reach the new server, connections already open on the old one finish their requests.
 */
export function startTransport(config: Config, handler: Handler, log: Logger): Transport {
  const tls = config.tls;
  const readTls = () => (tls ? { cert: readFileSync(tls.certFile, "utf8"), key: readFileSync(tls.keyFile, "utf8"), ciphers: TLS12_CIPHERS } : undefined);

  const fetch = async (request: Request, server: Server<undefined>) => {
    const response = await handler(request, server.requestIP(request)?.address ?? null);
    if (tls) response.headers.set("strict-transport-security", HSTS);
    return response;
  };
  const listen = (port: number) =>
    Bun.serve({
      hostname: config.host,
      port,
      tls: readTls(),
      // Only with TLS, where the swap needs it; otherwise a second keyturn on the port fails loudly.
      reusePort: tls !== null,
      maxRequestBodySize: MAX_REQUEST_BODY,
      idleTimeout: config.idleTimeoutSeconds,
      fetch,
      error(e) {
        log.error("unexpected error outside the app", { error: String(e?.stack ?? e) });
        return new Response(JSON.stringify({ ok: false, error: "internal_error", message: "Something went wrong on our side." }), {
          status: 500,
          headers: { "content-type": "application/json;charset=utf-8" },
        });
      },
    });

  let current = listen(config.port);
  const port = current.port!;
  const draining = new Set<Promise<void>>();
  const retired = new Set<ReturnType<typeof listen>>();
  const host = current.hostname?.includes(":") ? `[${current.hostname}]` : current.hostname;

  return {
    url: `${tls ? "https" : "http"}://${host}:${port}`,
    tls: tls !== null,
    async reloadTls() {
      if (!tls) return false;
      let next;
      try {
        next = listen(port);
      } catch (e) {
        log.error("TLS reload failed; still serving the previous certificate", { error: String((e as Error).message ?? e) });
        return false;
      }
      const old = current;
      current = next;
      retired.add(old);
      const done = old.stop(false).then(() => {
        retired.delete(old);
        draining.delete(done);
      });
      draining.add(done);
      log.info("TLS certificate reloaded", { cert: tls.certFile });
      return true;
    },
    async stop(timeoutMs) {
      const all = [current, ...retired];
      const stopped = Promise.all([...all.map((s) => s.stop(false)), ...draining]).then(() => true);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timedOut = new Promise<false>((r) => (timer = setTimeout(() => r(false), timeoutMs)));
      const drained = await Promise.race([stopped, timedOut]);
      clearTimeout(timer);
      if (!drained) await Promise.all(all.map((s) => s.stop(true)));
      return { drained };
    },
  };
}
