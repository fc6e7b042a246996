import { edenGC } from "bun:jsc";

/** Requests between two young collections. */
export const REQUESTS_PER_YOUNG_COLLECTION = 250;

/**
 * Paces the garbage collector's young generation by requests served. JavaScriptCore collects it
 * only once as many bytes were allocated as the heap holds (with a server's RAM every heap counts
 * as small), so under load 20-40 MB of garbage stayed resident, most of what a process holds over
 * its idle size: bench 4a's manifest-only load peaked at 124-133 MB without this and at 108 MB with
 * it, for a young collection of 0.3-1 ms every 250 requests (bench/README.md, "4a and 5a, fourth
 * round"). Whole collections stay JavaScriptCore's: asking for one (Bun.gc(false)) leaves the scope
 * to it, and it made none below its own limit; making one (bun:jsc's fullGC) stops every request
 * for 10-30 ms.
 *
 * Every `every` requests the collection runs right after the turn that served the request
 * (setImmediate), never inside anyone's answer, and one at a time.
 */
export class CollectionPacing {
  private served = 0;
  private scheduled = false;

  constructor(
    private readonly collectYoung: () => unknown = edenGC,
    private readonly every = REQUESTS_PER_YOUNG_COLLECTION,
    private readonly later: (run: () => void) => void = (run) => setImmediate(run),
  ) {}

  /** Counts one request; every `every`th schedules the young collection. */
  request(): void {
    if (++this.served < this.every || this.scheduled) return;
    this.served = 0;
    this.scheduled = true;
    this.later(() => {
      this.scheduled = false;
      this.collectYoung();
    });
  }
}
