import { edenGC } from "bun:jsc";
import { expect, test } from "bun:test";
import { CollectionPacing, REQUESTS_PER_YOUNG_COLLECTION } from "../../src/cli/collection-pacing";

/** Runs what the pacing scheduled, when the test says (the turn after the request, in production). */
function manualLater() {
  const queued: (() => void)[] = [];
  return { later: (run: () => void) => void queued.push(run), runAll: () => queued.splice(0).forEach((run) => run()) };
}

test("a young collection after every 250th request, run after the turn that served it, never inside it", () => {
  let collections = 0;
  const turn = manualLater();
  const pacing = new CollectionPacing(() => collections++, REQUESTS_PER_YOUNG_COLLECTION, turn.later);
  for (let i = 0; i < 249; i++) pacing.request();
  turn.runAll();
  expect(collections).toBe(0);
  pacing.request();
  expect(collections).toBe(0); // scheduled, not run within the request
  turn.runAll();
  expect(collections).toBe(1);
  for (let i = 0; i < 500; i++) pacing.request();
  turn.runAll();
  expect(collections).toBe(2); // one scheduled collection at a time, whatever the count meanwhile
  for (let i = 0; i < 250; i++) pacing.request();
  turn.runAll();
  expect(collections).toBe(3); // and counting starts again after it
});

test("the runtime's young collection frees what no request holds any more", async () => {
  let freed = 0;
  const registry = new FinalizationRegistry(() => freed++);
  (() => {
    for (let i = 0; i < 100; i++) registry.register({ answer: `garbage ${i}` }, i);
  })();
  const pacing = new CollectionPacing(edenGC, 10, (run) => run());
  for (let i = 0; i < 10; i++) pacing.request();
  // Finalizers run on a later turn than the collection.
  for (let turn = 0; turn < 20 && freed === 0; turn++) await new Promise((resolve) => setTimeout(resolve, 1));
  expect(freed).toBeGreaterThan(0);
});
