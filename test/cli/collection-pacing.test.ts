import { expect, test } from "bun:test";
import {
  CollectionPacing,
  FULL_COLLECTION_AFTER_BYTES,
  REQUESTS_PER_YOUNG_COLLECTION,
  runtimeCollector,
  type Collector,
} from "../../src/cli/collection-pacing";

const MB = 2 ** 20;

/** A collector whose heap size the test sets; it records what was asked of it. */
function fakeCollector(start: number) {
  const asked: string[] = [];
  const collector: Collector & { size: number } = {
    size: start,
    young: () => (asked.push("young"), collector.size),
    requestFull: () => void asked.push("full"),
    heapSize: () => collector.size,
  };
  return { collector, asked };
}

/** Runs what the pacing scheduled, when the test says (the turn after the request, in production). */
function manualLater() {
  const queued: (() => void)[] = [];
  return { later: (run: () => void) => void queued.push(run), runAll: () => queued.splice(0).forEach((run) => run()) };
}

test("a young collection after every 250th request, run after the turn that served it, never inside it", () => {
  const { collector, asked } = fakeCollector(20 * MB);
  const turn = manualLater();
  const pacing = new CollectionPacing(collector, REQUESTS_PER_YOUNG_COLLECTION, FULL_COLLECTION_AFTER_BYTES, turn.later);
  for (let i = 0; i < 249; i++) pacing.request();
  turn.runAll();
  expect(asked).toEqual([]);
  pacing.request();
  expect(asked).toEqual([]); // scheduled, not run within the request
  turn.runAll();
  expect(asked).toEqual(["young"]);
  for (let i = 0; i < 500; i++) pacing.request();
  turn.runAll();
  expect(asked).toEqual(["young", "young"]); // one scheduled collection at a time, whatever the count meanwhile
});

test("a whole collection is asked for once what survives grew 8 MB over the smallest heap, and once only until it drops", () => {
  const { collector, asked } = fakeCollector(30 * MB);
  const turn = manualLater();
  const pacing = new CollectionPacing(collector, 1, 8 * MB, turn.later);
  const afterYoung = (size: number) => {
    collector.size = size;
    pacing.request();
    turn.runAll();
    return asked.splice(0);
  };
  expect(afterYoung(20 * MB)).toEqual(["young"]); // the smallest heap seen is now 20 MB
  expect(afterYoung(27 * MB)).toEqual(["young"]);
  expect(afterYoung(28.5 * MB)).toEqual(["young", "full"]);
  expect(afterYoung(29 * MB)).toEqual(["young"]); // asked already: counted from 28.5 MB now
  expect(afterYoung(19 * MB)).toEqual(["young"]); // the whole collection ended; 19 MB is the new smallest
  expect(afterYoung(27.5 * MB)).toEqual(["young", "full"]);
});

test("the runtime's young collection frees what no request holds any more", async () => {
  let freed = 0;
  const registry = new FinalizationRegistry(() => freed++);
  (() => {
    for (let i = 0; i < 100; i++) registry.register({ answer: `garbage ${i}` }, i);
  })();
  const pacing = new CollectionPacing(runtimeCollector, 10, FULL_COLLECTION_AFTER_BYTES, (run) => run());
  for (let i = 0; i < 10; i++) pacing.request();
  // Finalizers run on a later turn than the collection.
  for (let turn = 0; turn < 20 && freed === 0; turn++) await new Promise((resolve) => setTimeout(resolve, 1));
  expect(freed).toBeGreaterThan(0);
});
