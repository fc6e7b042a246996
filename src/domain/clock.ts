/** Time is injected everywhere so tests can move it; production uses the system clock. */
export type Clock = () => number; // milliseconds since the epoch

export const systemClock: Clock = () => Date.now();

/** ISO 8601 with a numeric offset and no fraction, as docs/architecture.md asks: 2026-11-21T22:39:27+00:00. */
export function isoTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "+00:00");
}
