import type { ReleaseKey, Store } from "../../store/types";
import type { Clock } from "../clock";
import { newEvent } from "../events";
import { laneName } from "./release-controls";
import { placeOf, versionOf, type ReleaseIndex } from "./release-index";

/**
 * release.published: a release live for the first time; its event is written with its record. Every (lane, version) a scan finds live is
 * recorded in the records (known_releases); those no process had recorded before are the newly
 * published, reported once across restarts and across processes sharing the records (the insert
 * decides, so two processes scanning the same tree report a release once between them).
 */
export class ReleasePublications {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly onPublished: (releases: readonly ReleaseKey[]) => void | Promise<void>,
  ) {}

  /** Call with each index a scan swaps in; returns the releases it published. */
  async scanned(index: ReleaseIndex): Promise<ReleaseKey[]> {
    const seen = new Set<string>();
    const keys: ReleaseKey[] = [];
    for (const r of index.all) {
      // Read without making each release's manifest: a scan of a big tree lists thousands.
      const place = placeOf(r);
      const key = { lane: laneName(place.product, place.channel, place.platform), version: versionOf(r) };
      const text = `${key.lane}\n${key.version}`;
      if (!seen.has(text)) seen.add(text), keys.push(key);
    }
    const now = this.clock();
    const published = await this.store.recordKnownReleases(keys, now, (release) => newEvent("release.published", { release }, now));
    if (published.length > 0) await this.onPublished(published);
    return published;
  }
}
