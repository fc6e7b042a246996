import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { VARIANTS } from "../src/config/variants";
import { Admin } from "../src/domain/admin/operator";
import { Audit } from "../src/domain/audit";
import { systemClock } from "../src/domain/clock";
import { generateKeyFiles } from "../src/domain/keys";
import { openPostgresStore, type PostgresStore } from "../src/store/postgres";
import { BASE_URL, device, tempDir } from "./helpers";
import { announceSkip, freshSchema, PG_URL, type TestSchema } from "./databases";
import { serve, type Serving } from "./serve-bare";

if (!PG_URL) announceSkip("test/scale-out.test.ts", "KEYTURN_TEST_POSTGRES_URL");

describe.skipIf(!PG_URL)("two keyturn processes on one PostgreSQL", () => {
  let schema: TestSchema;
  let dir: string;
  let store: PostgresStore;
  let admin: Admin;
  let a: Serving;
  let b: Serving;

  beforeAll(async () => {
    schema = await freshSchema();
    dir = tempDir();
    generateKeyFiles(join(dir, "keys"), VARIANTS.alpha.defaultLicenseKid);
    mkdirSync(join(dir, "releases"));
    const common = ["--variant", "alpha", "--base-url", BASE_URL, "--database", schema.url, "--keys", join(dir, "keys"), "--releases", join(dir, "releases")];
    // Both start at once against the fresh schema: the migrations run under the advisory lock.
    [a, b] = await Promise.all([serve(common), serve(common)]);
    store = await openPostgresStore(schema.url);
    admin = new Admin(VARIANTS.alpha, store, systemClock, new Audit(store, systemClock));
  });
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await store?.close();
    await schema?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const newLicense = (seats: number) =>
    admin.createLicense({
      licensee: "Ada Lovelace",
      organization: "Analytical Engines Ltd",
      plan: "pro",
      planTitle: "Professional",
      seats,
      channels: ["stable"],
      expires: null,
    });

  const call = (s: Serving, method: string, path: string, opts: { body?: unknown; token?: string } = {}) =>
    fetch(`${s.url}/api/v1${path}`, {
      method,
      headers: { ...(opts.body !== undefined ? { "content-type": "application/json" } : {}), ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}) },
      body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
    });

  test("concurrent activations split between the processes never take more than the license's seats", async () => {
    const { key, license } = await newLicense(4);
    const answers = await Promise.all(
      Array.from({ length: 24 }, async (_, i) => {
        const res = await call(i % 2 ? a : b, "POST", "/licenses/activate", { body: { key, device: device("alpha") } });
        return { status: res.status, body: (await res.json()) as { ok: boolean; error?: string; entitlement?: { seats: { used: number } } } };
      }),
    );
    const granted = answers.filter((x) => x.status === 200);
    expect(granted).toHaveLength(4);
    expect(granted.map((g) => g.body.entitlement!.seats.used).sort()).toEqual([1, 2, 3, 4]);
    const refused = answers.filter((x) => x.status !== 200);
    expect(refused).toHaveLength(20);
    expect(refused.every((x) => x.status === 409 && x.body.error === "seat_limit")).toBe(true);
    expect(await store.countActiveSeats(license.id)).toBe(4);
  });

  test("deactivated through one process, the token is refused by the other on its very next request", async () => {
    const { key } = await newLicense(2);
    const activated = await call(a, "POST", "/licenses/activate", { body: { key, device: device("alpha") } });
    expect(activated.status).toBe(200);
    const { token } = (await activated.json()) as { token: string };
    // B verifies (and caches) the token first, so a cache that skipped the records would let it through.
    expect((await call(b, "GET", "/entitlements/current", { token })).status).toBe(200);
    expect((await call(b, "GET", "/entitlements/current", { token })).status).toBe(200);

    expect((await call(a, "POST", "/entitlements/deactivate", { token })).status).toBe(200);
    const refused = await call(b, "GET", "/entitlements/current", { token });
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: string }).error).toBe("entitlement_revoked");
  });

  test("a license revoked by an admin command is refused by both processes at once", async () => {
    const { key, license } = await newLicense(2);
    const activated = await call(b, "POST", "/licenses/activate", { body: { key, device: device("alpha") } });
    const { token } = (await activated.json()) as { token: string };
    expect((await call(a, "GET", "/entitlements/current", { token })).status).toBe(200);
    await store.revokeLicense(license.id, Date.now());
    for (const s of [a, b]) {
      const res = await call(s, "GET", "/entitlements/current", { token });
      expect(res.status).toBe(403);
      expect(((await res.json()) as { error: string }).error).toBe("license_revoked");
    }
  });
});
