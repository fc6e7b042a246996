import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "../../src/config/log";
import { CLI_CALLER } from "../../src/domain/admin/deps";
import { createAdminToken } from "../../src/domain/admin/tokens";
import { createLicense, device, testSite, type TestSite } from "../helpers";

// Issue: "One JSON log line per request (time, address, method, path without query secrets,
// status, duration, ref), never a token, key, ID token or nonce in any log".

let site: TestSite | null = null;
afterEach(async () => {
  await site?.close();
  site = null;
});

async function loggedSite(format: "json" | "text" = "json", level: "debug" | "info" | "warn" = "debug") {
  const lines: string[] = [];
  site = await testSite("alpha", { log: createLogger(format, level, (l) => lines.push(l)) });
  mkdirSync(join(site.dir, "releases"));
  await site.composed.services.releases.ready();
  return { site, lines };
}

/** The request lines, once the app has written them (they are written after the answer). */
async function requestLines(lines: string[], n: number) {
  for (let i = 0; i < 100 && lines.filter((l) => l.includes('"msg":"request"')).length < n; i++) await Bun.sleep(1);
  return lines.filter((l) => l.includes('"msg":"request"')).map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe("request log", () => {
  test("one JSON line per request: time, address, method, path without query, status, duration, ref", async () => {
    const { site, lines } = await loggedSite();
    await site.request("GET", "/health?probe=1");
    const refused = await site.request("GET", "/entitlements/current");
    const { ref } = (await refused.json()) as { ref: string };
    await site.request("DELETE", "/licenses/activate");
    await site.request("GET", "/nothing/here");
    await site.request("GET", `/meta?${"q".repeat(9000)}`);
    const logged = await requestLines(lines, 5);
    expect(logged.length).toBe(5);
    expect(logged[0]).toEqual({
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      level: "info",
      msg: "request",
      address: "203.0.113.7",
      method: "GET",
      path: "/api/v1/health",
      status: 200,
      ms: expect.any(Number),
    });
    expect(logged[1]).toMatchObject({ path: "/api/v1/entitlements/current", status: 401, ref });
    expect(logged[2]).toMatchObject({ method: "DELETE", status: 405, ref: expect.stringMatching(/^ref_/) });
    expect(logged[3]).toMatchObject({ status: 404 });
    expect(logged[4]).toMatchObject({ path: "/api/v1/meta", status: 400, ref: expect.stringMatching(/^ref_/) });
  });

  test("never a license key, token, ID token or nonce, whatever the request carries", async () => {
    const { site, lines } = await loggedSite();
    const { key } = await createLicense(site);
    const dev = device("alpha");
    const activated = (await (await site.request("POST", "/licenses/activate", { body: { key, device: dev } })).json()) as { token: string };
    const token = activated.token;
    expect(token).toBeString();
    // A refused activation with a mistyped key, and the key sent in the query string as well.
    await site.request("POST", `/licenses/activate?key=${encodeURIComponent(key)}`, { body: { key: key.replace(/.$/, "Z"), device: dev } });
    await site.request("POST", "/entitlements/refresh", { token, body: { device: dev } });
    await site.request("GET", `/entitlements/current?access_token=${token}`, { token });
    await site.request("GET", "/entitlements/current", { token: token + "x" });
    const idToken = "eyJhbGciOiJSUzI1NiJ9.eyJub25jZSI6InNlY3JldC1ub25jZS0xMjM0In0.c2lnbmF0dXJlLWJ5dGVz";
    const nonce = "secret-nonce-1234";
    await site.request("POST", `/auth/identity/exchange?nonce=${nonce}`, { body: { id_token: idToken, device: dev } });
    await site.request("POST", "/auth/identity/challenge", { body: { device: dev } });
    await site.request("POST", "/entitlements/deactivate", { token });
    await site.request("POST", "/entitlements/refresh", { token, body: "{ not json" });
    await requestLines(lines, 9);
    const all = lines.join("\n");
    expect(lines.length).toBeGreaterThanOrEqual(9);
    for (const secret of [key, key.replaceAll("-", ""), token, token.split(".")[2]!, idToken, nonce, dev.hash]) expect(all).not.toContain(secret);
  });

  test("an admin path addressing a licence by its key is logged with the key masked (prefix and last four); by id in clear", async () => {
    const { site, lines } = await loggedSite();
    const { key, license } = await createLicense(site);
    const admin = (await createAdminToken(site.composed.services.admin, CLI_CALLER, { name: "log", scopes: ["admin"] })).secret;
    const typed = key.toLowerCase().replaceAll("0", "o");
    for (const path of [
      `/admin/licenses/${key}`,
      `/admin/licenses/${typed}`,
      `/admin/licenses/${encodeURIComponent(key)}/revoke`,
      `/admin/licenses/${license.id}`,
      `/nothing/${key}`,
    ])
      await site.request(path.endsWith("/revoke") ? "POST" : "GET", path, { token: admin });
    const logged = await requestLines(lines, 5);
    const paths = logged.map((l) => l.path);
    const masked = `${key.split("-")[0]}-…${key.slice(-4)}`;
    expect(paths).toEqual([
      `/api/v1/admin/licenses/${masked}`,
      `/api/v1/admin/licenses/${key.split("-")[0]!.toLowerCase()}-…${typed.slice(-4)}`,
      `/api/v1/admin/licenses/${masked}/revoke`,
      `/api/v1/admin/licenses/${license.id}`,
      `/api/v1/nothing/${masked}`,
    ]);
    expect(logged.slice(0, 4).map((l) => l.status)).toEqual([200, 200, 200, 200]);
    const all = lines.join("\n").toUpperCase();
    for (const group of key.split("-").slice(1, 5)) expect(all).not.toContain(group);
  });

  test("text format and --log-level", async () => {
    const { site, lines } = await loggedSite("text", "info");
    await site.request("GET", "/meta?x=y");
    const requestLines = () => lines.filter((l) => l.includes(" request "));
    for (let i = 0; i < 100 && requestLines().length === 0; i++) await Bun.sleep(1);
    expect(requestLines()[0]).toMatch(/^\S+ INFO  request address=203\.0\.113\.7 method=GET path=\/api\/v1\/meta status=200 ms=[\d.]+$/);
    await site.close();
    const quiet = await loggedSite("json", "warn");
    await quiet.site.request("GET", "/meta");
    await Bun.sleep(5);
    expect(quiet.lines).toEqual([]);
  });
});
