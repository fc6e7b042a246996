import { edenGC, heapSize } from "bun:jsc";

/** The collections the pacing asks for, injected by tests. */
export interface Collector {
  /** A young-generation collection, now; returns the heap's size after it (bytes). */
  young(): number;
  /** Asks for a whole-heap collection, which the runtime makes alongside the program (concurrent marking). */
  requestFull(): void;
  /** The heap's size now: what survived the last collection (bytes). */
  heapSize(): number;
}

export const runtimeCollector: Collector = {
  young: edenGC,
  // Bun.gc(false) only asks: JavaScriptCore marks on its own thread while requests go on. A whole
  // collection made synchronously (bun:jsc's fullGC) stops every request 10-30 ms on keyturn's heap.
  requestFull: () => Bun.gc(false),
  heapSize,
};

/** Requests between two young collections. */
export const REQUESTS_PER_YOUNG_COLLECTION = 250;
/** How far what survives young collections may grow past the smallest heap seen before a whole collection is asked for. */
export const FULL_COLLECTION_AFTER_BYTES = 8 * 2 ** 20;

/**
 * Paces the garbage collector by requests served. JavaScriptCore lets the young generation grow to
 * the heap's own size before collecting it, and the heap to twice its live size before a whole
 * collection, as long as the heap is under a quarter of the RAM it sees (a server's gigabytes).
 * Under load that kept 20-40 MB of garbage resident, most of what a process holds over its idle
 * size: bench 4a's manifest-only load peaked at 124-133 MB without this and at 108 MB with it, for
 * a young collection of 0.3-1 ms every 250 requests (bench/README.md, "4a and 5a, fourth round").
 *
 * So every `every` requests a young collection runs right after the turn that served the request
 * (setImmediate: not inside anyone's answer), and when what survives has grown by `fullAfterBytes`
 * over the smallest heap seen (objects promoted while their request was in flight, then dropped) a
 * whole collection is asked for. The smallest heap follows the heap down once that collection ends.
 */
export class CollectionPacing {
  private served = 0;
  private scheduled = false;
  private smallest: number;

  constructor(
    private readonly collector: Collector = runtimeCollector,
    private readonly every = REQUESTS_PER_YOUNG_COLLECTION,
    private readonly fullAfterBytes = FULL_COLLECTION_AFTER_BYTES,
    private readonly later: (run: () => void) => void = (run) => setImmediate(run),
  ) {
    this.smallest = collector.heapSize();
  }

  /** Counts one request; every `every`th schedules the young collection. */
  request(): void {
    if (++this.served < this.every || this.scheduled) return;
    this.served = 0;
    this.scheduled = true;
    this.later(() => this.collect());
  }

  private collect(): void {
    this.scheduled = false;
    const after = this.collector.young();
    if (after > this.smallest + this.fullAfterBytes) {
      this.collector.requestFull();
      // Asked once: until the whole collection has brought the heap down, the growth counts from here.
      this.smallest = after;
    } else this.smallest = Math.min(this.smallest, after);
  }
}
