/**
 * The update path's per-request cost of choosing a release (release-selection.ts), in process:
 * `bun bench/rollout-selection.ts`. Three cases on one lane of 100 releases: no rollout (the newest,
 * no hashing), a 50 % rollout with the installation's choice cached, and the same with a new
 * installation every call (the choice made: SHA-256 and the comparison). Real SQLite records for
 * the controls (their generation read through the WAL-index stamp).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { VARIANTS } from "../src/config/variants";
import { ReleaseControls } from "../src/domain/releases/release-controls";
import { ReleaseIndex, type ServedRelease } from "../src/domain/releases/release-index";
import { ReleaseSelection } from "../src/domain/releases/release-selection";
import type { Rollout } from "../src/domain/releases/rollout";
import { openSqliteStore } from "../src/store/sqlite";

const variant = VARIANTS.alpha;
const dir = mkdtempSync(join(tmpdir(), "keyturn-selection-"));
const store = openSqliteStore(dir);
const clock = () => Date.parse("2026-11-21T12:00:00Z");
const selection = new ReleaseSelection(variant, new ReleaseControls(store, clock, variant), clock);

function release(channel: string, i: number, rollout: Rollout | null): ServedRelease {
  const version = `1.0.${i}`;
  const manifest = {
    product: "alpha",
    channel,
    platform: "win-x64",
    version,
    released: Date.UTC(2026, 0, 1) + i * 60_000,
    installer: `a-${version}.exe`,
    size: 1,
    sha256: "0".repeat(64),
    rollout: i === 99 ? rollout : null,
    feeds: null,
  };
  return {
    manifest,
    folder: `alpha/${channel}/win-x64/${version}`,
    installerPath: "/nonexistent",
    manifestBytes: new Uint8Array(8),
    manifestEtag: '"x"',
    signatureBytes: new Uint8Array(8),
    signatureEtag: '"y"',
  };
}
const index = ReleaseIndex.of([
  ...Array.from({ length: 100 }, (_, i) => release("stable", i, null)),
  ...Array.from({ length: 100 }, (_, i) => release("preview", i, { percent: 50 })),
]);

async function perCall(name: string, n: number, call: (i: number) => Promise<unknown>) {
  for (let i = 0; i < 2000; i++) await call(i);
  const started = performance.now();
  for (let i = 0; i < n; i++) await call(i);
  const us = ((performance.now() - started) * 1000) / n;
  console.log(`${name.padEnd(58)} ${us.toFixed(2)} µs`);
}

const dev = "x".repeat(43);
await perCall("no rollout in the lane (newest, no hashing)", 200_000, () => selection.served(index, { dev, kind: "license" }, "alpha", "stable", "win-x64"));
await perCall("50 % rollout, the installation's choice cached", 200_000, () =>
  selection.served(index, { dev, kind: "license" }, "alpha", "preview", "win-x64"),
);
await perCall("50 % rollout, a new installation every call (choice made)", 50_000, (i) =>
  selection.served(index, { dev: `${i}`.padStart(43, "d") + Math.random(), kind: "license" }, "alpha", "preview", "win-x64"),
);
await store.close();
rmSync(dir, { recursive: true, force: true });
