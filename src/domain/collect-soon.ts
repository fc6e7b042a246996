/**
 * A whole collection just after this turn, for work done once that leaves megabytes of garbage at
 * once: a whole scan of the release tree (stats, paths and bytes of every folder, and after a
 * re-scan the previous index), or a long releases listing (a manifest made for each packed
 * release, release-table.ts; release-selection.ts). The runtime would collect them only once the heap grew
 * further, and until then their pages stay resident, under whatever load comes next: collected at
 * once, they go back to the system (bench/README.md, "Notes behind the code" and "4a and 5a,
 * thirteenth round"). A whole collection takes 10–15 ms at 10,000 releases.
 */
export function collectSoon(): void {
  setTimeout(() => Bun.gc(true), 0).unref();
}
