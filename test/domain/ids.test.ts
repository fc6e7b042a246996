import { expect, test } from "bun:test";
import { newId } from "../../src/domain/ids";
import { createLicense, device, testClock, testSite } from "../helpers";

test("ids: prefix and 20 lowercase base32 characters", () => {
  for (const prefix of ["act", "lic", "ref"] as const) expect(newId(prefix, Date.now())).toMatch(new RegExp(`^${prefix}_[0-9a-hjkmnp-tv-z]{20}$`));
});

test("ids sort in the order they were made (their time first), so the indexes keyed by them grow at the end", () => {
  const times = [0, 1, 31, 32, 1_000, Date.parse("2026-11-22T00:00:00Z"), Date.parse("2026-11-22T00:00:00.001Z"), Date.parse("2999-01-01T00:00:00Z")];
  const ids = times.map((t) => newId("act", t));
  expect([...ids].sort()).toEqual(ids);
});

test("ids made in the same millisecond differ (50 random bits)", () => {
  const now = Date.now();
  const ids = new Set(Array.from({ length: 10_000 }, () => newId("ref", now)));
  expect(ids.size).toBe(10_000);
  expect(new Set([...ids].map((id) => id.slice(0, 14))).size).toBe(1);
});

test("license, activation and audit ids carry the time of the injected clock, not the system's", async () => {
  // Issue 12: newId read Date.now(), so ids made under a test (or a moved) clock carried another time.
  const at = Date.parse("2031-05-06T07:08:09Z");
  const site = await testSite("gamma", { clock: testClock(at) });
  try {
    const timeOf = (id: string) => id.slice(id.indexOf("_") + 1, id.indexOf("_") + 11);
    const expected = timeOf(newId("ref", at));
    const { key, license } = await createLicense(site);
    const r = await site.request("POST", "/licenses/activate", { body: { key, device: device("gamma") } });
    expect(r.status).toBe(200);
    const { entitlement } = (await r.json()) as { entitlement: { id: string } };
    const audit = await site.composed.store.listAudit({ limit: 10 });
    expect(audit.length).toBe(2);
    for (const id of [license.id, entitlement.id, ...audit.map((a) => a.ref)]) expect(timeOf(id)).toBe(expected);
  } finally {
    await site.close();
  }
});
