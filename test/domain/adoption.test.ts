import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { silentLogger } from "../../src/config/log";
import { AdoptionRecorder } from "../../src/domain/adoption";
import { openSqliteStore, type SqliteStore } from "../../src/store/sqlite";
import type { Store } from "../../src/store/types";
import { createLicense, device, tempDir, testClock, testSite, type TestSite } from "../helpers";
import { releaseSite } from "../release-tree";

// Adoption (design.md): last-seen times and the lane an installation reads, recorded without a write
// per request: coalesced in memory, written in one transaction at each flush and at close.

describe("AdoptionRecorder", () => {
  let dir: string;
  let store: SqliteStore;
  const clock = testClock();

  beforeEach(async () => {
    dir = tempDir();
    store = openSqliteStore(dir);
    await store.createLicense({
      id: "lic_a",
      kind: "license",
      keyHash: "k",
      licensee: "L",
      organization: "O",
      plan: "p",
      planTitle: "P",
      channels: ["stable"],
      seats: 5,
      issued: clock(),
      expires: null,
      revoked: null,
    });
    for (const id of ["act_1", "act_2"])
      await store.activate({
        licenseId: "lic_a",
        kind: "license",
        installation: id,
        deviceHash: id,
        product: null,
        name: "n",
        platform: "win-x64",
        version: "1.0.0",
        newId: id,
        now: clock(),
      });
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("sightings are held in memory, coalesced per installation, and written at flush in one go", async () => {
    let writes = 0;
    const counting: Store = Object.assign(Object.create(store), {
      recordSightings: (s: Parameters<Store["recordSightings"]>[0]) => (writes++, store.recordSightings(s)),
    });
    const recorder = new AdoptionRecorder(counting, clock, silentLogger);
    const t0 = clock();
    clock.advance(1000);
    recorder.seen("act_1", "stable/win-x64");
    clock.advance(1000);
    recorder.seen("act_1", null);
    recorder.seen("act_2", "preview/win-x64");
    expect((await store.getActivation("act_1"))!.lastSeen).toBe(t0);
    await recorder.flush();
    expect(writes).toBe(1);
    expect((await store.getActivation("act_1"))!.lastSeen).toBe(t0 + 2000);
    expect(await store.installationsSeen(0)).toEqual([
      { product: null, lane: "preview/win-x64", version: "1.0.0", installations: 1 },
      { product: null, lane: "stable/win-x64", version: "1.0.0", installations: 1 },
    ]);
    await recorder.flush();
    expect(writes).toBe(1);
  });

  test("close writes what is pending; a failed write keeps the sightings for the next flush", async () => {
    let fail = true;
    const flaky: Store = Object.assign(Object.create(store), {
      recordSightings: (s: Parameters<Store["recordSightings"]>[0]) => (fail ? Promise.reject(new Error("database is locked")) : store.recordSightings(s)),
    });
    const recorder = new AdoptionRecorder(flaky, clock, silentLogger);
    clock.advance(5000);
    recorder.seen("act_2", "stable/win-x64");
    await recorder.flush();
    expect((await store.getActivation("act_2"))!.lastSeen).toBe(clock() - 5000);
    fail = false;
    await recorder.close();
    expect((await store.getActivation("act_2"))!.lastSeen).toBe(clock());
  });
});

describe("entitlements/current and refresh record the installation", () => {
  let site: TestSite;
  beforeEach(async () => (site = await testSite("alpha")));
  afterEach(() => site.close());

  test("current is a sighting (written at the flush); refresh writes the version at once", async () => {
    const { key } = await createLicense(site);
    const d = device("alpha", { version: "1.0.0" });
    const { token } = (await (await site.request("POST", "/licenses/activate", { body: { key, device: d } })).json()) as { token: string };
    const { activation } = (await (await site.request("GET", "/entitlements/current", { token })).json()) as { activation: { id: string } };
    const created = site.clock();
    site.clock.advance(60_000);
    expect((await site.request("GET", "/entitlements/current", { token })).status).toBe(200);
    expect((await site.composed.store.getActivation(activation.id))!.lastSeen).toBe(created);
    await site.composed.services.adoption.flush();
    expect((await site.composed.store.getActivation(activation.id))!.lastSeen).toBe(created + 60_000);
    site.clock.advance(60_000);
    expect((await site.request("POST", "/entitlements/refresh", { token, body: { device: { ...d, version: "1.2.0" } } })).status).toBe(200);
    expect(await site.composed.store.getActivation(activation.id)).toMatchObject({ version: "1.2.0", lastSeen: created + 120_000 });
  });
});

describe("one sighting per bearer request", () => {
  test("a manifest GET is seen once, naming its lane; current once, naming none", async () => {
    const s = await releaseSite("alpha");
    try {
      const release = s.tree.add({ version: "1.0.0" });
      await s.holder.rescan();
      const token = await s.token();
      const adoption = s.site.composed.services.adoption;
      const lanes: Array<string | null> = [];
      const seen = adoption.seen.bind(adoption);
      adoption.seen = (id, lane) => {
        lanes.push(lane);
        seen(id, lane);
      };
      expect((await s.site.request("GET", `/updates/${release.lane}/alpha-update.json`, { token })).status).toBe(200);
      expect(lanes).toEqual([release.lane]);
      lanes.length = 0;
      expect((await s.site.request("GET", "/entitlements/current", { token })).status).toBe(200);
      expect(lanes).toEqual([null]);
    } finally {
      await s.close();
    }
  });
});
