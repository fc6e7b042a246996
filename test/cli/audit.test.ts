import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { isoTime } from "../../src/domain/clock";
import { createLicense, device, testClock, testSite, type TestSite } from "../helpers";
import { runCli } from "../processes";

const DAY = 86_400_000;
const clock = testClock();
let site: TestSite;
let args: string[];
let one: { key: string; id: string };
let two: { key: string; id: string };
let activationId = "";
let seatLimitRef = "";
const t0 = clock();

beforeAll(async () => {
  site = await testSite("alpha", { clock });
  args = ["--variant", "alpha", "--data", join(site.dir, "data")];
  const a = await createLicense(site, { seats: 2 });
  const b = await createLicense(site, { seats: 1 });
  one = { key: a.key, id: a.license.id };
  two = { key: b.key, id: b.license.id };
  const dev = device("alpha");
  const act = await site.request("POST", "/licenses/activate", { body: { key: one.key, device: dev } });
  const { token, entitlement } = (await act.json()) as { token: string; entitlement: { id: string } };
  activationId = entitlement.id;
  await site.request("POST", "/licenses/activate", { body: { key: two.key, device: device("alpha") } });
  const refused = await site.request("POST", "/licenses/activate", { body: { key: two.key, device: device("alpha") } });
  seatLimitRef = ((await refused.json()) as { ref: string }).ref;
  clock.advance(DAY);
  expect((await site.request("POST", "/entitlements/refresh", { token, body: { device: dev } })).status).toBe(200);
});
afterAll(() => site.close());

type Line = {
  ref: string;
  time: string;
  action: string;
  outcome: string;
  error: string | null;
  license: string | null;
  activation: string | null;
  address: string | null;
  actor: string | null;
};

async function audit(...extra: string[]): Promise<Line[]> {
  const r = await runCli(["audit", ...args, ...extra, "--json"]);
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  return (JSON.parse(r.stdout) as { audit: Line[] }).audit;
}

test("lists every line, newest first, with the spec's fields", async () => {
  const lines = await audit();
  expect(
    lines
      .slice(1)
      .map((l) => `${l.action} ${l.outcome} ${l.error ?? ""}`.trim())
      .sort(),
  ).toEqual(["activate ok", "activate ok", "activate refused seat_limit", "license-create ok", "license-create ok"]);
  expect(lines).toHaveLength(6);
  expect(lines[0]).toEqual({
    ref: expect.stringMatching(/^ref_/),
    time: isoTime(t0 + DAY),
    action: "refresh",
    outcome: "ok",
    error: null,
    license: one.id,
    activation: activationId,
    address: "203.0.113.7",
    // An installation's own request: no admin token or operator acted.
    actor: null,
  });
  expect(lines.slice(1).every((l) => l.time === isoTime(t0))).toBe(true);
});

test("filters by license (key or id), activation, error code and time", async () => {
  const byKey = await audit("--license", one.key);
  expect(byKey.map((l) => l.action).sort()).toEqual(["activate", "license-create", "refresh"]);
  expect(await audit("--license", one.id)).toEqual(byKey);

  expect((await audit("--activation", activationId)).map((l) => l.action)).toEqual(["refresh", "activate"]);

  const seatLimit = await audit("--error", "seat_limit");
  expect(seatLimit).toHaveLength(1);
  expect(seatLimit[0]).toMatchObject({ ref: seatLimitRef, license: two.id, action: "activate", outcome: "refused" });

  expect((await audit("--since", new Date(t0 + 1000).toISOString())).map((l) => l.action)).toEqual(["refresh"]);
  expect(await audit("--until", new Date(t0 + 1000).toISOString())).toHaveLength(5);
  expect((await audit("--limit", "1")).map((l) => l.action)).toEqual(["refresh"]);
});

test("prints one readable line per audit line without --json", async () => {
  const r = await runCli(["audit", ...args, "--error", "seat_limit"]);
  expect(r.code).toBe(0);
  expect(r.stdout.trim()).toBe(`${isoTime(t0)}  ${seatLimitRef}  activate  refused seat_limit  license ${two.id}  from 203.0.113.7`);
});

test("the readable line names who made an admin change, as --json's actor does (docs/admin-api.md)", async () => {
  const json = await runCli(["audit", ...args, "--json"]);
  const change = (JSON.parse(json.stdout) as { audit: { ref: string; actor: string | null }[] }).audit.find((l) => l.actor !== null);
  expect(change).toBeDefined();
  const text = await runCli(["audit", ...args]);
  expect(text.stdout.split("\n").find((line) => line.includes(change!.ref))).toEndWith(`  by ${change!.actor}`);
});

test("refuses bad filters with a usage line, and an unknown license", async () => {
  for (const bad of [["--error", "no_such_code"], ["--since", "yesterday"], ["--limit", "0"], ["stray"]]) {
    const r = await runCli(["audit", ...args, ...bad]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("usage: keyturn audit");
  }
  const r = await runCli(["audit", ...args, "--license", "AL-ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ"]);
  expect(r.code).toBe(1);
  expect(r.stderr).toContain("not_found");
});
