import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { device } from "./helpers";
import { startServe, type ServeProcess } from "./serve-process";

// The admin API end to end against a real `keyturn serve`: a token made by the CLI on the same
// records while the server runs, a license created over HTTP, installations activated with its key,
// seats that cannot drop below those in use, and revoke/reinstate taking effect at the next request.

const MAIN = join(import.meta.dir, "..", "src", "main.ts");
let serve: ServeProcess;
let secret: string;
let tokenId: string;

/** keyturn on the server's records; its --json output parsed. */
function cli(...args: string[]) {
  return JSON.parse(run(...args, "--json"));
}

function run(...args: string[]): string {
  const p = Bun.spawnSync([process.execPath, MAIN, ...args, "--variant", "alpha", "--data", join(serve.dir, "data")], {
    env: { PATH: process.env.PATH ?? "" },
  });
  if (p.exitCode !== 0) throw new Error(`${args.join(" ")} exited ${p.exitCode}: ${p.stderr.toString()}`);
  return p.stdout.toString();
}

async function api(method: string, path: string, o: { token?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...o.headers };
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  if (o.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`${serve.url}/api/v1${path}`, { method, headers, body: o.body === undefined ? undefined : JSON.stringify(o.body) });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

beforeAll(async () => {
  serve = await startServe("alpha");
  const created = cli("admin-token", "create", "--name", "store", "--scopes", "licenses:write,licenses:read");
  secret = created.secret;
  tokenId = created.id;
  expect(secret).toMatch(/^kta_/);
}, 30_000);
afterAll(() => serve.cleanup());

test("a CLI-made token creates a license over HTTP; seats stay above those in use; revoke refuses the installation at once, reinstate accepts it again", async () => {
  const store = { token: secret };
  const created = await api("POST", "/admin/licenses", {
    ...store,
    headers: { "idempotency-key": "order-1" },
    body: { licensee: "Ada Lovelace", organization: "Engines", plan: "pro", planTitle: "Pro", seats: 2, channels: ["stable"], email: "ada@engines.example" },
  });
  expect(created.status).toBe(201);
  const { key, license } = created.body as { key: string; license: { id: string; seats: number } };
  expect(license.seats).toBe(2);

  const installs: { dev: ReturnType<typeof device>; token: string }[] = [];
  for (let i = 0; i < 2; i++) {
    const dev = device("alpha");
    const activated = await api("POST", "/licenses/activate", { body: { key, device: dev } });
    expect(activated.status).toBe(200);
    installs.push({ dev, token: activated.body.token as string });
  }
  const current = () => api("GET", "/entitlements/current", { token: installs[0]!.token });
  expect((await current()).status).toBe(200);

  const shown = await api("GET", `/admin/licenses/${license.id}`, store);
  expect(shown.body.license.seatsUsed).toBe(2);
  expect(shown.body.activations).toHaveLength(2);
  const lower = await api("PATCH", `/admin/licenses/${license.id}`, { ...store, body: { seats: 1 } });
  expect({ status: lower.status, error: lower.body.error }).toEqual({ status: 409, error: "seats_in_use" });
  const raise = await api("PATCH", `/admin/licenses/${key}`, { ...store, body: { seats: 3 } });
  expect({ status: raise.status, seats: raise.body.license.seats, changed: raise.body.changed }).toEqual({ status: 200, seats: 3, changed: ["seats"] });

  const revoked = await api("POST", `/admin/licenses/${license.id}/revoke`, store);
  expect(revoked.status).toBe(200);
  expect(revoked.body.license.revoked).toBeString();
  const refused = await current();
  expect({ status: refused.status, error: refused.body.error }).toEqual({ status: 403, error: "license_revoked" });
  const refresh = await api("POST", "/entitlements/refresh", { token: installs[1]!.token, body: { device: installs[1]!.dev } });
  expect({ status: refresh.status, error: refresh.body.error }).toEqual({ status: 403, error: "license_revoked" });

  const reinstated = await api("POST", `/admin/licenses/${license.id}/reinstate`, store);
  expect({ status: reinstated.status, revoked: reinstated.body.license.revoked }).toEqual({ status: 200, revoked: null });
  expect((await current()).status).toBe(200);

  // The token holds the licence scopes only; the CLI revokes it and the very next request is refused.
  const audit = await api("GET", "/admin/audit", store);
  expect({ status: audit.status, error: audit.body.error }).toEqual({ status: 403, error: "insufficient_scope" });
  const auditor = cli("admin-token", "create", "--name", "auditor", "--scopes", "audit:read").secret as string;
  const trail = await api("GET", `/admin/audit?license=${license.id}`, { token: auditor });
  expect(trail.status).toBe(200);
  const lines = trail.body.lines as { action: string; actor: string | null }[];
  const byToken = lines
    .filter((l) => l.actor === `${tokenId} (store)`)
    .map((l) => l.action)
    .sort();
  // its changes, and its read of the licence (reads are audited too, coalesced)
  expect(byToken).toEqual(["license-create", "license-reinstate", "license-revoke", "license-show", "license-update"]);
  run("admin-token", "revoke", tokenId);
  const after = await api("GET", "/admin/licenses", store);
  expect({ status: after.status, error: after.body.error }).toEqual({ status: 401, error: "admin_token_invalid" });
  for (const s of [secret, auditor]) expect(serve.lines.join("\n")).not.toContain(s.slice(4));
}, 30_000);

test("rekey: a new key shown once; the old key is refused from then on; installations keep their seats and tokens (HTTP and CLI)", async () => {
  const writer = cli("admin-token", "create", "--name", "rekeyer", "--scopes", "licenses:write,licenses:read,audit:read").secret as string;
  const created = await api("POST", "/admin/licenses", {
    token: writer,
    body: { licensee: "Lost Key", organization: "Engines", plan: "pro", planTitle: "Pro", seats: 2, channels: ["stable"] },
  });
  const { key: oldKey, license } = created.body as { key: string; license: { id: string } };
  const dev = device("alpha");
  const first = await api("POST", "/licenses/activate", { body: { key: oldKey, device: dev } });
  expect(first.status).toBe(200);

  const rekeyed = await api("POST", `/admin/licenses/${license.id}/rekey`, { token: writer });
  expect(rekeyed.status).toBe(200);
  const newKey = rekeyed.body.key as string;
  expect(newKey).toMatch(/^AL-/);
  expect(newKey).not.toBe(oldKey);
  expect(rekeyed.body.license).toMatchObject({ id: license.id, seatsUsed: 1 });

  const old = await api("POST", "/licenses/activate", { body: { key: oldKey, device: device("alpha") } });
  expect({ status: old.status, error: old.body.error }).toEqual({ status: 403, error: "license_unknown" });
  // The installation keeps its token and its seat: activating again with the new key reuses it.
  expect((await api("GET", "/entitlements/current", { token: first.body.token })).status).toBe(200);
  const again = await api("POST", "/licenses/activate", { body: { key: newKey, device: dev } });
  expect(again.status).toBe(200);
  expect(again.body.entitlement).toMatchObject({ id: first.body.entitlement.id, seats: { used: 1, total: 2 } });

  // The CLI gives another; the HTTP one stops working too. One audit line each, by its actor.
  const byCli = cli("license", "rekey", newKey);
  expect(byCli).toMatchObject({ id: license.id, seats: { used: 1, total: 2 } });
  expect(byCli.key).not.toBe(newKey);
  expect((await api("POST", "/licenses/activate", { body: { key: newKey, device: dev } })).body.error).toBe("license_unknown");
  expect((await api("POST", "/licenses/activate", { body: { key: byCli.key, device: dev } })).status).toBe(200);
  const lines = (await api("GET", `/admin/audit?license=${license.id}`, { token: writer })).body.lines as { action: string; actor: string | null }[];
  expect(lines.filter((l) => l.action === "license-rekey").map((l) => (l.actor?.endsWith("(rekeyer)") ? "token" : l.actor))).toEqual(["cli", "token"]);
  expect(serve.lines.join("\n")).not.toContain(byCli.key);
}, 30_000);

test("a licence for a person over HTTP: organization and planTitle may be left out; the entitlement says none and the plan", async () => {
  const writer = cli("admin-token", "create", "--name", "shop", "--scopes", "licenses:write").secret as string;
  const created = await api("POST", "/admin/licenses", { token: writer, body: { licensee: "Ada", plan: "pro", seats: 1, channels: ["stable"] } });
  expect(created.status).toBe(201);
  expect(created.body.license).toMatchObject({ organization: "", planTitle: "pro" });
  const activated = await api("POST", "/licenses/activate", { body: { key: created.body.key, device: device("alpha") } });
  expect(activated.body.entitlement).toMatchObject({ licensee: "Ada", organization: "", planTitle: "pro" });
}, 30_000);
