/**
 * Metered use (design.md "Licence models": `meters` on a licence, `POST /api/v1/entitlements/usage
 * {meter, amount, idempotencyKey}` with the bearer answers `{remaining, resetsAt?}`, refuses
 * `usage_limit` (403), events at 80 % and 100 %), through the same Elysia instance production uses.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CLI_CALLER, type Scope } from "../../src/domain/admin/deps";
import { createAdminToken } from "../../src/domain/admin/tokens";
import { isoTime } from "../../src/domain/clock";
import { parseMeterOption } from "../../src/domain/meters";
import { addWebhookEndpoint } from "../../src/domain/webhooks/endpoints";
import { device, testClock, testSite, type TestSite } from "../helpers";

const DAY = 86_400_000;
let site: TestSite;
let adminToken: string;
const clock = testClock();

beforeAll(async () => {
  site = await testSite("alpha", { clock });
  adminToken = await mint(["admin"]);
  await addWebhookEndpoint(site.composed.services.admin, CLI_CALLER, {
    url: "https://hooks.example/meters",
    events: ["meter.warning", "meter.exhausted", "license.updated"],
  });
});
afterAll(() => site.close());

async function mint(scopes: Scope[]): Promise<string> {
  return (await createAdminToken(site.composed.services.admin, CLI_CALLER, { name: "meters", scopes })).secret;
}

/** A licence with these meters, activated on one device; `again()` activates that device again (a token that outlived a clock jump). */
async function licenseWith(meters: unknown): Promise<{ id: string; key: string; token: string; again: () => Promise<string> }> {
  const created = await site.request("POST", "/admin/licenses", {
    token: adminToken,
    body: { licensee: "Ada", plan: "pro", seats: 2, channels: ["stable"], meters },
  });
  expect(created.status).toBe(201);
  const { license, key } = (await created.json()) as { license: { id: string }; key: string };
  const dev = device("alpha");
  const again = async () => {
    const activated = await site.request("POST", "/licenses/activate", { body: { key, device: dev } });
    expect(activated.status).toBe(200);
    return ((await activated.json()) as { token: string }).token;
  };
  return { id: license.id, key, token: await again(), again };
}

const use = (token: string, meter: string, amount: number, idempotencyKey: string = crypto.randomUUID()) =>
  site.request("POST", "/entitlements/usage", { token, body: { meter, amount, idempotencyKey } });

async function events(type: string): Promise<Array<{ meter: { name: string; used: number; remaining: number } }>> {
  const all = await site.composed.store.listEvents({ after: 0, limit: 1000, types: [type] });
  return all.map((e) => JSON.parse(e.data));
}

describe("POST /entitlements/usage", () => {
  test("spends from a periodic meter, answers what remains and when it resets, and refuses usage_limit past it", async () => {
    const created = clock();
    const { token, again } = await licenseWith({ exports: { limit: 10, period: "30d" } });
    const first = await use(token, "exports", 4);
    expect(first.status).toBe(200);
    expect(first.headers.get("cache-control")).toBe("no-store");
    expect(await first.json()).toEqual({ ok: true, remaining: 6, resetsAt: isoTime(created + 30 * DAY) });

    const over = await use(token, "exports", 7);
    expect(over.status).toBe(403);
    const refusal = (await over.json()) as { ok: boolean; error: string; message: string; ref: string };
    expect(refusal.error).toBe("usage_limit");
    expect(refusal.message).toContain("6 of 10 left");
    expect(refusal.ref).toBeString();

    expect(await (await use(token, "exports", 6)).json()).toEqual({ ok: true, remaining: 0, resetsAt: isoTime(created + 30 * DAY) });
    expect((await use(token, "exports", 1)).status).toBe(403);

    // The next period starts from zero, in the window the time falls in.
    clock.advance(31 * DAY);
    expect(await (await use(await again(), "exports", 1)).json()).toEqual({ ok: true, remaining: 9, resetsAt: isoTime(created + 60 * DAY) });
  });

  test("GET answers each meter as it stands, spending nothing; a licence without meters answers {}", async () => {
    const { token } = await licenseWith({ exports: { limit: 10, period: "30d" }, credits: { limit: 3 } });
    await use(token, "credits", 1);
    const read = async (t: string) => (await (await site.request("GET", "/entitlements/usage", { token: t })).json()) as { meters: Record<string, unknown> };
    const first = await read(token);
    expect(first.meters.credits).toEqual({ limit: 3, period: null, used: 1, remaining: 2, resetsAt: null });
    expect(first.meters.exports).toMatchObject({ limit: 10, period: "30d", used: 0, remaining: 10 });
    expect(await read(token)).toEqual(first);
    expect((await read((await licenseWith(undefined)).token)).meters).toEqual({});
  });

  test("a one-time pool has no resetsAt and never starts again", async () => {
    const { token, again } = await licenseWith({ credits: { limit: 3 } });
    expect(await (await use(token, "credits", 3)).json()).toEqual({ ok: true, remaining: 0 });
    clock.advance(400 * DAY);
    const refused = await use(await again(), "credits", 1);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: string }).error).toBe("usage_limit");
  });

  test("the same idempotencyKey answers the first answer and counts once; with another amount it is a conflict", async () => {
    const { id, token } = await licenseWith({ exports: { limit: 10 } });
    const key = "retry-me-1";
    const a = await (await use(token, "exports", 3, key)).json();
    const b = await (await use(token, "exports", 3, key)).json();
    expect(a).toEqual({ ok: true, remaining: 7 });
    expect(b).toEqual(a);
    const conflict = await use(token, "exports", 4, key);
    expect(conflict.status).toBe(409);
    expect(((await conflict.json()) as { error: string }).error).toBe("idempotency_conflict");
    expect(await (await use(token, "exports", 1)).json()).toEqual({ ok: true, remaining: 6 });
    const usage = (await site.composed.store.listAudit({ licenseId: id })).filter((l) => l.action === "usage" && l.outcome === "ok");
    expect(usage).toHaveLength(2);
  });

  test("an unknown meter is not_found; a body outside the model is invalid_request; no bearer is refused", async () => {
    const { token } = await licenseWith({ exports: { limit: 10 } });
    const unknown = await use(token, "imports", 1);
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: string }).error).toBe("not_found");
    for (const body of [
      { meter: "exports", amount: 0, idempotencyKey: "k" },
      { meter: "exports", amount: 1.5, idempotencyKey: "k" },
      { meter: "exports", amount: 1, idempotencyKey: "" },
      { meter: "exports", amount: 1, idempotencyKey: "has space" },
      { meter: "exports", amount: 1 },
      { meter: "exports", amount: 1, idempotencyKey: "k", extra: true },
    ]) {
      const r = await site.request("POST", "/entitlements/usage", { token, body });
      expect(r.status).toBe(400);
      expect(((await r.json()) as { error: string }).error).toBe("invalid_request");
    }
    expect((await site.request("POST", "/entitlements/usage", { body: { meter: "exports", amount: 1, idempotencyKey: "k" } })).status).toBe(401);
  });

  test("events fire once at 80 % and once at 100 %", async () => {
    const { id, token } = await licenseWith({ tokens: { limit: 10 } });
    const mine = async (type: string) => (await events(type)).filter((e) => (e as unknown as { license: { id: string } }).license.id === id);
    await use(token, "tokens", 7);
    expect(await mine("meter.warning")).toHaveLength(0);
    await use(token, "tokens", 1);
    const warning = await mine("meter.warning");
    expect(warning).toHaveLength(1);
    expect(warning[0]!.meter).toMatchObject({ name: "tokens", used: 8, remaining: 2 });
    await use(token, "tokens", 1);
    expect(await mine("meter.warning")).toHaveLength(1);
    expect(await mine("meter.exhausted")).toHaveLength(0);
    await use(token, "tokens", 1);
    expect(await mine("meter.exhausted")).toHaveLength(1);
    await use(token, "tokens", 1); // refused: no event
    expect(await mine("meter.exhausted")).toHaveLength(1);
  });
});

describe("meters in the admin API", () => {
  test("show answers each meter's use; update keeps the use of a meter kept by name, and says meters changed", async () => {
    const { id, token } = await licenseWith({ exports: { limit: 10, period: "30d" }, credits: { limit: 5 } });
    await use(token, "exports", 4);
    const shown = (await (await site.request("GET", `/admin/licenses/${id}`, { token: adminToken })).json()) as { meters: Record<string, unknown> };
    expect(shown.meters.exports).toMatchObject({ limit: 10, period: "30d", used: 4, remaining: 6 });
    expect(shown.meters.credits).toEqual({ limit: 5, period: null, used: 0, remaining: 5, resetsAt: null });

    const updated = await site.request("PATCH", `/admin/licenses/${id}`, { token: adminToken, body: { meters: { exports: { limit: 20, period: "30d" } } } });
    expect(updated.status).toBe(200);
    expect(((await updated.json()) as { changed: string[] }).changed).toEqual(["meters"]);
    const after = (await (await site.request("GET", `/admin/licenses/${id}`, { token: adminToken })).json()) as { meters: Record<string, unknown> };
    expect(Object.keys(after.meters)).toEqual(["exports"]);
    expect(after.meters.exports).toMatchObject({ limit: 20, used: 4, remaining: 16 });
    expect((await use(token, "credits", 1)).status).toBe(404);

    const same = await site.request("PATCH", `/admin/licenses/${id}`, { token: adminToken, body: { meters: { exports: { limit: 20, period: "30d" } } } });
    expect(((await same.json()) as { changed: string[] }).changed).toEqual([]);
  });

  test("a licence without meters shows none; meters need licenses:write; a bad period is refused naming it", async () => {
    const { id } = await licenseWith(undefined);
    const shown = (await (await site.request("GET", `/admin/licenses/${id}`, { token: adminToken })).json()) as Record<string, unknown>;
    expect("meters" in shown).toBe(false);
    const reader = await mint(["licenses:read"]);
    const denied = await site.request("PATCH", `/admin/licenses/${id}`, { token: reader, body: { meters: { a: { limit: 1 } } } });
    expect(denied.status).toBe(403);
    const bad = await site.request("PATCH", `/admin/licenses/${id}`, { token: adminToken, body: { meters: { exports: { limit: 1, period: "5s" } } } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { message: string }).message).toContain("meters.exports.period");
  });

  test("--meter's text: NAME=LIMIT[/PERIOD], several joined by commas or repeated", () => {
    expect(parseMeterOption(["exports=500/30d", "credits=1000,ai=5/1h"])).toEqual({
      exports: { limit: 500, period: "30d" },
      credits: { limit: 1000, period: null },
      ai: { limit: 5, period: "1h" },
    });
    expect(() => parseMeterOption(["exports"])).toThrow("NAME=LIMIT");
  });
});
