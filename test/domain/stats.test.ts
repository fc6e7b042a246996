import { afterEach, expect, test } from "bun:test";
import { VARIANTS } from "../../src/config/variants";
import { ReleaseControls } from "../../src/domain/releases/release-controls";
import { collectStats } from "../../src/domain/stats";
import { testSite, type TestSite } from "../helpers";

const sites: TestSite[] = [];
afterEach(async () => {
  while (sites.length) await sites.pop()!.close();
});

test("a count without a release index (keyturn stats, the tree unreadable) leaves the stored rollout buckets alone", async () => {
  const s = await testSite("alpha");
  sites.push(s);
  const store = s.composed.store;
  const { numbers } = await store.rolloutReleaseNumbers([{ lane: "alpha/stable/win-x64", version: "2.0.0" }], 100);
  await store.storeRolloutBuckets(numbers[0]!, [{ activationId: "act_kept", bucket: 5n }]);
  const stats = await collectStats({ store, clock: s.clock, controls: new ReleaseControls(store, s.clock, VARIANTS.alpha), index: null });
  expect(stats.rollouts).toEqual([]);
  // The release is over only now, said with an index that no longer has it: its bucket goes.
  expect((await store.rolloutReleaseNumbers([], 100)).dropped).toBe(1);
});
