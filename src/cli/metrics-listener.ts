import { isLoopbackHost } from "../config/config";
import type { Logger } from "../config/log";
import type { Metrics } from "../http/metrics";

/**
 * GET /metrics on a listener of its own (`--metrics-listen`), so scraping needs no token and the
 * metrics are never reachable on the public address. Anything else there is 404. A bind to other
 * than loopback is warned about: the counts are business figures, served to anyone who connects.
 */
export function startMetricsListener(address: { host: string; port: number }, metrics: Metrics, log: Logger) {
  const server = Bun.serve({
    hostname: address.host,
    port: address.port,
    async fetch(request) {
      const path = new URL(request.url).pathname;
      if (path !== "/metrics") return new Response("not found\n", { status: 404 });
      if (request.method !== "GET" && request.method !== "HEAD") return new Response(null, { status: 405, headers: { allow: "GET, HEAD" } });
      return new Response(request.method === "HEAD" ? null : await metrics.text(), { headers: { "content-type": metrics.contentType } });
    },
  });
  // The metrics publish business counts (activations, refusals by reason) to whoever can connect.
  if (!isLoopbackHost(address.host))
    log.warn("metrics are served without authentication on a non-loopback address: allow only the scraper to reach it (firewall)", {
      host: address.host,
      port: server.port,
    });
  log.info("metrics listening", { url: `http://${server.hostname?.includes(":") ? `[${server.hostname}]` : server.hostname}:${server.port}/metrics` });
  return server;
}
