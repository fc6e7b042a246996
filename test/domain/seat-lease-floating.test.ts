import { afterAll, expect, test } from "bun:test";
import { createPublicKey } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { decodeJwt } from "jose";
import { deviceHash, KeyturnClient, KeyturnClientError, type Activation } from "../../src/client";
import { BASE_URL, createLicense, testSite } from "../helpers";

// A floating license (design.md "Seats that come back"): a short seat lease, here 10 minutes, shared
// in turns by more installations than it has seats. Each program uses the client kit as a program
// would: it refreshes when the kit says (refreshAt), and quits without deactivating (a crash, a
// laptop closed). A seat in use never lapses; a seat left lapses and goes to the next activation.
const MIN = 60_000;
const site = await testSite("alpha");
afterAll(() => site.close());

function kit(): KeyturnClient {
  const keysDir = join(site.dir, "keys");
  const licenseKeys = Object.fromEntries(
    readdirSync(keysDir)
      .filter((f) => f.endsWith(".pem"))
      .map((f) => [
        f.slice(0, -4),
        (createPublicKey(readFileSync(join(keysDir, f), "utf8")).export({ type: "spki", format: "der" }) as Buffer).toString("base64"),
      ]),
  );
  return new KeyturnClient({
    variant: "alpha",
    issuer: BASE_URL,
    baseUrl: "http://localhost",
    product: "alpha",
    licenseKeys,
    now: site.clock,
    fetch: (input, init) => site.app.handle(new Request(input, init)),
  });
}

test("a 2-seat license with a 10 minute lease, used by 5 installations in turns through the kit: each gets a seat, never more than 2 held, no seat in use lapses", async () => {
  const { key, license } = await createLicense(site, { seats: 2, seatLease: "10m" });
  const client = kit();
  const installs = await Promise.all(
    Array.from({ length: 5 }, async (_, i) => ({
      device: { hash: await deviceHash("alpha", `floating-${i}`), name: `PC ${i}`, platform: "win-x64", version: "1.0.0", product: "alpha" },
    })),
  );
  // Installation i runs from i·20 min for 25 min: two overlap at a time, and each starts 15 min after
  // the one before the previous quit (its seat lapsed then; the previous one's is in use).
  const sessions: Array<Activation | null> = installs.map(() => null);
  const start = site.clock();
  let refreshes = 0;
  for (let minute = 0; minute <= 4 * 20 + 25; minute++) {
    site.clock.set(start + minute * MIN);
    for (const [i, inst] of installs.entries()) {
      const running = minute >= i * 20 && minute < i * 20 + 25;
      const s = sessions[i];
      if (running && !s) {
        const got = await client.activate(key, inst.device);
        expect(got.entitlement.seatLease).toMatchObject({ lease: "10m", seconds: 600 });
        // The token lives no longer than the lease (the site's TTL is 7 days).
        const claims = decodeJwt(got.token);
        expect(claims.exp! - claims.iat!).toBe(600);
        sessions[i] = got;
      } else if (running && s && client.refreshDue(s.entitlement)) {
        sessions[i] = await client.refresh(s.token, inst.device);
        refreshes++;
      } else if (!running && s) sessions[i] = null; // quits without deactivating
    }
    expect(await site.composed.store.countActiveSeats(license.id)).toBeLessThanOrEqual(2);
    // A sixth installation while two sessions are running finds every seat in use.
    if (minute % 20 === 1 && minute > 20 && minute < 100) {
      const refused = await client
        .activate(key, { hash: await deviceHash("alpha", `extra-${minute}`), name: "Extra", platform: "win-x64", version: "1.0.0", product: "alpha" })
        .catch((e) => e);
      expect(refused).toBeInstanceOf(KeyturnClientError);
      expect((refused as KeyturnClientError).code).toBe("seat_limit");
    }
  }
  // Every session refreshed every 5 minutes (halfway through the lease) and none was cut short.
  expect(refreshes).toBe(5 * 4);
  const activations = await site.composed.store.listActivations(license.id);
  expect(new Set(activations.map((a) => a.installation)).size).toBe(5);
  const reclaims = (await site.composed.store.listAudit({ licenseId: license.id })).filter((l) => l.action === "reclaim");
  // Installations 2, 3 and 4 each took the seat of the one before the previous.
  const idOf = (i: number) => activations.find((a) => a.name === `PC ${i}`)!.id;
  expect(reclaims.map((l) => [l.activationId, l.actor]).sort()).toEqual(
    [
      [idOf(0), idOf(2)],
      [idOf(1), idOf(3)],
      [idOf(2), idOf(4)],
    ].sort(),
  );
});
