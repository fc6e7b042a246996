import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "../../src/config/log";
import { VARIANTS } from "../../src/config/variants";
import { loadKeyRing } from "../../src/domain/keys";
import { ReleaseHolder } from "../../src/domain/releases/holder";
import { releaseKeysOf } from "../../src/domain/releases/signature";
import type { Every, WatchTree } from "../../src/domain/releases/tree-watch";
import { Site } from "../../src/domain/site";
import { openSqliteStore } from "../../src/store/sqlite";
import { ReleaseTree } from "../release-tree";

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0)) await f();
});

/** Timers the test moves by hand: each registered repetition runs when the test says a period has passed. */
function manualTimers() {
  const timers: { ms: number; run: () => void; stopped: boolean }[] = [];
  const every: Every = (ms, run) => {
    const t = { ms, run, stopped: false };
    timers.push(t);
    return () => (t.stopped = true);
  };
  return { every, timers, tick: () => timers.filter((t) => !t.stopped).forEach((t) => t.run()) };
}

const enospc = () => Object.assign(new Error("ENOSPC: System limit for number of file watchers reached, watch '/srv'"), { code: "ENOSPC" });

async function setup(watchTree: WatchTree) {
  const t = new ReleaseTree("gamma");
  cleanup.push(() => t.remove());
  t.add({ version: "1.0.0", released: "2026-09-01T00:00:00+00:00" });
  const lines: Record<string, unknown>[] = [];
  const log = createLogger("json", "debug", (line) => lines.push(JSON.parse(line)));
  const timers = manualTimers();
  const holder = new ReleaseHolder({
    root: t.root,
    variant: VARIANTS.gamma,
    releaseKeys: releaseKeysOf(await loadKeyRing(t.keysDir, VARIANTS.gamma)),
    log,
    watchTree,
    every: timers.every,
    rescanEveryMs: 20_000,
  });
  cleanup.push(() => holder.close());
  const dataDir = join(t.dir, "data");
  mkdirSync(dataDir);
  const store = openSqliteStore(dataDir);
  cleanup.push(() => store.close());
  const site = new Site({
    variant: VARIANTS.gamma,
    version: "test",
    store,
    keys: await loadKeyRing(t.keysDir, VARIANTS.gamma),
    releasesDir: t.root,
    releasesReady: () => holder.current !== null,
    releaseTree: () => ({ changes: holder.changeDetection, installersVerifying: holder.installersVerifying }),
    staffSignIn: false,
    rateLimits: () => "per-process",
  });
  return { t, holder, lines, timers, site };
}
const latest = (h: ReleaseHolder) => h.current?.latest(null, "stable", "win-x64")?.manifest.version;

/** Waits (briefly) for a scan started by something else than the test: nothing here asks for one. */
async function eventually(check: () => boolean, ms = 3000) {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error("condition not met in time");
    await Bun.sleep(5);
  }
}

describe("release tree watch exhausted (inotify max_user_watches)", () => {
  test("a watch that cannot start: periodic re-scans on the injected timer, said in /health", async () => {
    const { t, holder, lines, timers, site } = await setup(() => {
      throw enospc();
    });
    await holder.start({ watch: true });
    expect(holder.changeDetection).toEqual({ mode: "periodic", everyMs: 20_000, reason: "inotify watches exhausted (raise fs.inotify.max_user_watches)" });
    expect(lines.find((l) => l.msg === "cannot watch the release tree; re-scanning it periodically")).toMatchObject({ everySeconds: 20 });
    expect(await site.health()).toEqual({
      status: "ok",
      rateLimits: "per-process",
      licensing: "off",
      releaseChanges: "re-scanned every 20 s: inotify watches exhausted (raise fs.inotify.max_user_watches)",
    });
    expect(timers.timers.map((x) => x.ms)).toEqual([20_000]);

    await holder.rescan();
    expect(latest(holder)).toBe("1.0.0");
    t.add({ version: "1.1.0", released: "2026-10-01T00:00:00+00:00" });
    expect(latest(holder)).toBe("1.0.0");
    await Bun.sleep(50);
    expect(latest(holder)).toBe("1.0.0"); // no watch: nothing notices until the period passes
    timers.tick();
    await eventually(() => latest(holder) === "1.1.0");

    holder.close();
    expect(timers.timers.every((x) => x.stopped)).toBe(true);
  });

  test("a watch that fails later (error event): falls back to periodic re-scans, once", async () => {
    let fail: (e: unknown) => void = () => {};
    let closed = 0;
    const { t, holder, timers, site } = await setup((_root, _changed, failed) => {
      fail = failed;
      return { close: () => closed++ };
    });
    await holder.start({ watch: true });
    expect(holder.changeDetection).toEqual({ mode: "watch" });
    expect(await site.health()).toEqual({ status: "ok", rateLimits: "per-process", licensing: "off" });

    t.add({ version: "1.1.0", released: "2026-10-01T00:00:00+00:00" });
    fail(enospc());
    fail(enospc());
    expect(closed).toBe(1);
    expect(timers.timers.length).toBe(1);
    expect((await site.health()).releaseChanges).toContain("re-scanned every 20 s");
    // The failure itself re-scans (changes may have been missed), then every period.
    await eventually(() => latest(holder) === "1.1.0");
    t.add({ version: "1.2.0", released: "2026-11-01T00:00:00+00:00" });
    await Bun.sleep(50);
    expect(latest(holder)).toBe("1.1.0");
    timers.tick();
    await eventually(() => latest(holder) === "1.2.0");
  });
});
