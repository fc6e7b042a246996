import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { CLIENT_VARIANTS, KeySet, offlineRequestCode, verifyEntitlementToken } from "../../src/client";
import { CLI_CALLER } from "../../src/domain/admin/deps";
import { createLicense } from "../../src/domain/admin/licenses";
import { createAdminToken } from "../../src/domain/admin/tokens";
import { answerLastsUntil, answerOfflineRequest } from "../../src/domain/offline-activation";
import { toConfig } from "../../src/config/config";
import { BASE_URL, device, testSite, type TestSite } from "../helpers";

// An offline computer's request code (the client kit's offlineRequestCode) turned
// into its answer code by the admin API and by `keyturn activation offline`, with no shell pipeline,
// and a license's own token lifetime so that an offline licence lasts its term.

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");
const DAY = 86_400_000;
let site: TestSite | null = null;
afterEach(async () => {
  await site?.close();
  site = null;
});

const body = (extra: Record<string, unknown> = {}) => ({
  licensee: "Off Line",
  organization: "Cabin",
  plan: "pro",
  planTitle: "Pro",
  seats: 1,
  channels: ["stable"],
  ...extra,
});
const claimsOf = (token: string) => JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString()) as { exp: number; iat: number; sub: string };

/** The kit's own offline check of an answer code, against the site's license key. */
async function kitAccepts(s: TestSite, answer: string, deviceHash: string) {
  const keys = new KeySet(Object.fromEntries([...s.composed.keys.verify.values()].filter((k) => k.purpose === "license").map((k) => [k.kid, k.spki])));
  return verifyEntitlementToken(answer, { variant: CLIENT_VARIANTS.gamma, issuer: BASE_URL, keys, deviceHash, now: s.clock(), toleranceSec: 60 });
}

describe("POST /admin/activations/offline", () => {
  test("the kit's request code in, an answer code the kit accepts out; a license's tokenTtl lasts to its expiry; a seat is taken", async () => {
    site = await testSite("gamma");
    const s = site;
    const expires = s.clock() + 200 * DAY;
    const { key, license } = await createLicense(
      s.composed.services.admin,
      CLI_CALLER,
      body({ tokenTtl: 366 * 86_400, expires: new Date(expires).toISOString() }),
    );
    expect(license.tokenTtl).toBe(366 * 86_400);
    const { secret } = await createAdminToken(s.composed.services.admin, CLI_CALLER, { name: "support", scopes: ["activations:write"] });
    const dev = device("gamma");
    const code = offlineRequestCode({ device: dev, key });
    // Wrapped by copy and paste: the spaces and line breaks are ignored.
    const wrapped = code.replace(/(.{60})/g, "$1\n ");
    const r = await s.request("POST", "/admin/activations/offline", { token: secret, body: { code: wrapped } });
    expect(r.status).toBe(200);
    expect(r.headers.get("cache-control")).toBe("no-store");
    const done = (await r.json()) as { answer: string; entitlement: { id: string; expires: string; licenseExpires: string } };
    const verified = await kitAccepts(s, done.answer, dev.hash);
    expect(verified.claims.sub).toBe(done.entitlement.id);
    // 366 days asked, the license ends in 200: the token ends with the license, not after 7 days.
    expect(claimsOf(done.answer).exp * 1000).toBe(expires);
    expect(Date.parse(done.entitlement.expires)).toBe(expires);
    expect(Date.parse(done.entitlement.licenseExpires)).toBe(expires);
    const lines = await s.composed.store.listAudit({ licenseId: license.id });
    expect(lines.find((l) => l.action === "activate")).toMatchObject({ outcome: "ok", actor: expect.stringContaining("(support)") });

    // One seat: a second computer is refused as any activation would be, and the key can come beside the code.
    const other = await s.request("POST", "/admin/activations/offline", {
      token: secret,
      body: { code: offlineRequestCode({ device: device("gamma") }), key },
    });
    expect(((await other.json()) as { error: string }).error).toBe("seat_limit");
    expect(other.status).toBe(409);
  });

  test("a license without its own lifetime gets the site's offline one (366 days by default, not the 7 of online tokens); bad codes and a code without a key are 400", async () => {
    site = await testSite("gamma");
    const s = site;
    const { key } = await createLicense(s.composed.services.admin, CLI_CALLER, body({ seats: 2 }));
    const { secret } = await createAdminToken(s.composed.services.admin, CLI_CALLER, { name: "support", scopes: ["activations:write"] });
    const dev = device("gamma");
    const done = await answerOfflineRequest(s.composed.services.licensing, { code: offlineRequestCode({ device: dev }), key }, { address: null });
    const c = claimsOf(done.answer);
    expect((c.exp - c.iat) * 1000).toBe(366 * DAY);
    expect(Date.parse(done.validUntil)).toBe(c.exp * 1000);
    expect(answerLastsUntil(done.entitlement)).toBe(
      `This answer code works until ${new Date(c.exp * 1000).toISOString().slice(0, 16).replace("T", " ")} UTC; after that the computer needs a new one.`,
    );
    // An online activation of another computer on the same site still gets the 7 days of --token-ttl.
    const online = await s.composed.services.licensing.activate({ key: key, device: device("gamma") }, { address: null });
    expect(Date.parse(online.entitlement.expires) - s.clock()).toBe(7 * DAY);
    for (const code of ["not base64 at all!", Buffer.from("[1,2]").toString("base64url"), offlineRequestCode({ device: dev })]) {
      const r = await s.request("POST", "/admin/activations/offline", { token: secret, body: { code } });
      expect(r.status).toBe(400);
      expect(((await r.json()) as { error: string }).error).toBe("invalid_request");
    }
  });
});

describe("--offline-token-ttl", () => {
  test("the site's offline lifetime applies to offline answers only, the license's end cuts it, and the admin API answers validUntil", async () => {
    site = await testSite("gamma", { settings: { "offline-token-ttl": "30d" } });
    const s = site;
    const { secret } = await createAdminToken(s.composed.services.admin, CLI_CALLER, { name: "support", scopes: ["activations:write"] });
    const long = await createLicense(s.composed.services.admin, CLI_CALLER, body({ seats: 2 }));
    const r = await s.request("POST", "/admin/activations/offline", {
      token: secret,
      body: { code: offlineRequestCode({ device: device("gamma"), key: long.key }) },
    });
    expect(r.status).toBe(200);
    const done = (await r.json()) as { answer: string; validUntil: string; entitlement: { expires: string } };
    expect(Date.parse(done.validUntil)).toBe(s.clock() + 30 * DAY);
    expect(claimsOf(done.answer).exp * 1000).toBe(s.clock() + 30 * DAY);

    const ends = s.clock() + 10 * DAY;
    const short = await createLicense(s.composed.services.admin, CLI_CALLER, body({ expires: new Date(ends).toISOString() }));
    const cut = await answerOfflineRequest(
      s.composed.services.licensing,
      { code: offlineRequestCode({ device: device("gamma") }), key: short.key },
      { address: null },
    );
    expect(Date.parse(cut.validUntil)).toBe(ends);
    expect(answerLastsUntil(cut.entitlement)).toContain("when the licence ends");

    // A seat lease caps every token of the licence (a seat not seen that long is freed): the answer says so.
    const leased = await createLicense(s.composed.services.admin, CLI_CALLER, body({ seatLease: "10d" }));
    const capped = await answerOfflineRequest(
      s.composed.services.licensing,
      { code: offlineRequestCode({ device: device("gamma") }), key: leased.key },
      { address: null },
    );
    expect(Date.parse(capped.validUntil)).toBe(s.clock() + 10 * DAY);
    expect(answerLastsUntil(capped.entitlement)).toContain(", the licence's seat lease (10d) from now;");
  });

  test("more than 366 days is refused at start", () => {
    let refused: unknown;
    try {
      toConfig({ variant: "gamma", "base-url": BASE_URL, "offline-token-ttl": "400d" }, "admin");
    } catch (e) {
      refused = e;
    }
    expect(refused).toMatchObject({ setting: "offline-token-ttl", message: expect.stringContaining("at most 366d") });
  });
});

describe("keyturn activation offline and license --token-ttl", () => {
  test("the CLI prints the answer code the kit accepts; --token-ttl sets and clears a license's own lifetime", async () => {
    site = await testSite("gamma");
    const s = site;
    const common = ["--variant", "gamma", "--data", join(s.dir, "data"), "--keys", join(s.dir, "keys")];
    const run = (...args: string[]) => {
      const p = Bun.spawnSync([process.execPath, MAIN, ...args], { env: { PATH: process.env.PATH ?? "" } });
      return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
    };
    const created = run(
      "license",
      "create",
      ...common,
      "--licensee",
      "Off Line",
      "--organization",
      "Cabin",
      "--plan",
      "pro",
      "--plan-title",
      "Pro",
      "--seats",
      "1",
      "--channels",
      "stable",
      "--token-ttl",
      "90d",
      "--json",
    );
    expect(created.code).toBe(0);
    const lic = JSON.parse(created.stdout) as { key: string; id: string; tokenTtl: number };
    expect(lic.tokenTtl).toBe(90 * 86_400);

    const dev = device("gamma");
    const code = offlineRequestCode({ device: dev, key: lic.key });
    const noSite = run("activation", "offline", code, ...common);
    expect(noSite.code).toBe(2);
    expect(noSite.stderr).toContain("needs the site's --base-url");
    const answered = run("activation", "offline", code, ...common, "--base-url", BASE_URL);
    expect(answered.code).toBe(0);
    const answer = answered.stdout.trim();
    expect(answered.stderr).toContain("This answer code works until ");
    const c = claimsOf(answer);
    expect(c.exp - c.iat).toBe(90 * 86_400);
    const keys = new KeySet(Object.fromEntries([...s.composed.keys.verify.values()].filter((k) => k.purpose === "license").map((k) => [k.kid, k.spki])));
    const verified = await verifyEntitlementToken(answer, {
      variant: CLIENT_VARIANTS.gamma,
      issuer: BASE_URL,
      keys,
      deviceHash: dev.hash,
      now: Date.now(),
      toleranceSec: 60,
    });
    expect(verified.claims.lic).toBe(lic.id);

    const cleared = run("license", "update", lic.id, ...common, "--token-ttl", "default", "--json");
    expect(JSON.parse(cleared.stdout).tokenTtl).toBeNull();
    expect(run("license", "update", lic.id, ...common, "--token-ttl", "400d").code).toBe(2);
    // Six spawned CLI runs: about 2 s on a quiet machine, past bun's 5 s default on a loaded 2-core one.
  }, 30_000);
});
