import { afterAll, expect, test } from "bun:test";
import { startMetricsListener } from "../../src/cli/metrics-listener";
import { createLogger } from "../../src/config/log";
import { createLicense, device, testSite, type TestSite } from "../helpers";
import { startServe } from "../serve-process";

// Issue 13, item 9: GET /metrics in the Prometheus text format, off by default, on a listener of
// its own (--metrics-listen).

const sites: TestSite[] = [];
afterAll(async () => {
  for (const s of sites) await s.close();
});

/** The value of one series of a metrics text, by its exact name and labels. */
function series(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split("\n")) {
    const m = /^([a-z_]+)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = (m[2] ?? "").split(",").filter(Boolean);
    if (wanted.every((w) => have.includes(w)) && have.length === wanted.length) return Number(m[3]);
  }
  return undefined;
}

test("off by default: no metrics are kept", async () => {
  const site = await testSite("alpha");
  sites.push(site);
  expect(site.composed.services.metrics).toBeUndefined();
  expect((await site.request("GET", "/metrics")).status).toBe(404);
});

test("requests by endpoint and status, activations, seat_limit and rate-limit refusals, index and records gauges", async () => {
  const site = await testSite("alpha", { settings: { "metrics-listen": "127.0.0.1:0", "rate-limit-signin": "3/60s" } });
  sites.push(site);
  const metrics = site.composed.services.metrics!;
  const { key } = await createLicense(site, { seats: 1 });
  const ok = await site.request("POST", "/licenses/activate", { body: { key, device: device("alpha") } });
  expect(ok.status).toBe(200);
  const { token } = (await ok.json()) as { token: string };
  expect((await site.request("POST", "/licenses/activate", { body: { key, device: device("alpha") } })).status).toBe(409);
  for (let i = 0; i < 3; i++) await site.request("GET", "/entitlements/current", { token });
  expect((await site.request("POST", "/licenses/activate", { body: { key, device: device("alpha") } })).status).toBe(409);
  expect((await site.request("POST", "/licenses/activate", { body: { key, device: device("alpha") } })).status).toBe(429);
  await site.request("GET", "/no/such/thing");

  const text = await metrics.text();
  const activate = "POST /licenses/activate";
  expect(series(text, "keyturn_http_requests_total", { route: activate, status: "200" })).toBe(1);
  expect(series(text, "keyturn_http_requests_total", { route: activate, status: "409" })).toBe(2);
  expect(series(text, "keyturn_http_requests_total", { route: activate, status: "429" })).toBe(1);
  expect(series(text, "keyturn_http_requests_total", { route: "GET /entitlements/current", status: "200" })).toBe(3);
  expect(series(text, "keyturn_http_requests_total", { route: "unrouted", status: "404" })).toBe(1);
  expect(series(text, "keyturn_refusals_total", { route: activate, code: "seat_limit" })).toBe(2);
  expect(series(text, "keyturn_refusals_total", { route: activate, code: "rate_limited" })).toBe(1);
  expect(series(text, "keyturn_activations_total", { route: activate })).toBe(1);
  expect(series(text, "keyturn_http_request_duration_seconds_count", { route: activate })).toBe(4);
  // Three current requests with one token: one signature check, two cache hits.
  expect(series(text, "keyturn_token_cache_hit_ratio")).toBeCloseTo(2 / 3, 5);
  expect(series(text, "keyturn_records_up")).toBe(1);
  expect(series(text, "keyturn_rate_limit_store_up")).toBe(1);
  expect(series(text, "keyturn_release_index_releases")).toBe(0);
  expect(series(text, "keyturn_release_folders_skipped")).toBe(0);

  await site.composed.store.close();
  expect(series(await metrics.text(), "keyturn_records_up")).toBe(0);
});

test("a real server serves /metrics only on --metrics-listen, never on its public address", async () => {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  const serve = await startServe("gamma", ["--metrics-listen", `127.0.0.1:${port}`]);
  try {
    await serve.waitFor("metrics listening");
    await fetch(`${serve.url}/api/v1/health`);
    const scraped = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(scraped.status).toBe(200);
    expect(scraped.headers.get("content-type")).toStartWith("text/plain");
    const text = await scraped.text();
    expect(series(text, "keyturn_http_requests_total", { route: "GET /health", status: "200" })).toBe(1);
    expect(text).toContain("# TYPE keyturn_http_request_duration_seconds histogram");
    expect((await fetch(`${serve.url}/metrics`)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${port}/other`)).status).toBe(404);
  } finally {
    await serve.cleanup();
  }
});

test("a --metrics-listen bind other than loopback is warned about (the counts are business figures, served without a token); loopback is not", async () => {
  const site = await testSite("alpha", { settings: { "metrics-listen": "127.0.0.1:0" } });
  sites.push(site);
  for (const [host, warned] of [
    ["0.0.0.0", true],
    ["127.0.0.1", false],
    ["::1", false],
  ] as const) {
    const lines: string[] = [];
    const server = startMetricsListener(
      { host, port: 0 },
      site.composed.services.metrics!,
      createLogger("json", "info", (l) => lines.push(l)),
    );
    try {
      const warnings = lines.map((l) => JSON.parse(l) as { level: string; msg: string }).filter((l) => l.level === "warn");
      expect([host, warnings.length]).toEqual([host, warned ? 1 : 0]);
      if (warned) expect(warnings[0]!.msg).toMatch(/non-loopback/);
    } finally {
      await server.stop(true);
    }
  }
});
