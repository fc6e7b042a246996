/**
 * GET /admin/stats at scale (issue 34 item 2): LICENSES licences and ACTIVATIONS installations
 * (seeded straight into SQLite by bench/seed-scale.ts, then every active one moved onto one lane and
 * seen within the last 20 days), 12 releases part-way through a ramp on that lane, and
 * AUDIT_LINES activations in the audit trail over the last 30 days. Measures, on the compiled
 * executable pinned to the server core:
 *   - the server's CPU per stats request answered (a kept count where the build keeps one);
 *   - one count: its wall time and the server's CPU (the first, which stores the rollout buckets,
 *     and a later one, on a restarted process);
 *   - `entitlements/current` p99 over 4 connections, alone and while a count runs.
 * Every wrk run fails on any status but 200 (bench/lua/report.lua); a stats answer must be a 200
 * (a 503 while a count runs is asked again, 200 ms later, and the count's time runs until the 200).
 *
 *   bun bench/stats.ts [licences (100000)] [activations (300000)] [runs (3)]
 * Run it in another checkout to measure that build the same way (it builds the checkout it is in).
 */
import { Database } from "bun:sqlite";
import { createHash, createPrivateKey, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildExecutable } from "../build";
import { VARIANTS } from "../src/config/variants";
import { signManifest } from "../src/domain/releases/signature";
import { keyturn, makeKeys, RELEASE_KID } from "./lib/fixture";
import { startKeyturn, type Running } from "./lib/keyturn";
import { ensureTools, freePort } from "./lib/tools";
import { median, wrk } from "./lib/wrk";

const [nLic = "100000", nAct = "300000", nRuns = "3"] = process.argv.slice(2);
const RUNS = Number(nRuns);
const RAMPING = 12;
const AUDIT_LINES = 100_000;
const DAY = 86_400_000;
const LANE = { product: "alpha", channel: "stable", platform: "win-x64" };
const LANE_NAME = `${LANE.product}/${LANE.channel}/${LANE.platform}`;
const CONNS = 4;
const SECONDS = 8;
const variant = VARIANTS.alpha;
const log = (m: string) => console.error(`[stats bench ${new Date().toISOString().slice(11, 19)}] ${m}`);

ensureTools();
const dir = mkdtempSync(join(tmpdir(), "keyturn-stats-bench-"));
try {
  const exe = join(dir, "keyturn");
  log(`building ${exe}`);
  await buildExecutable(exe);
  const { keys, releaseKeyFile, licenseKeyFile } = makeKeys(exe, dir);
  const releases = join(dir, "releases");
  writeRampingReleases(releases, releaseKeyFile);
  const data = join(dir, "data");
  mkdirSync(data);
  log(`seeding ${nLic} licences and ${nAct} activations`);
  const seed = Bun.spawnSync([process.execPath, join(import.meta.dir, "seed-scale.ts"), data, licenseKeyFile, nLic, nAct, "2000"], {
    stdout: "inherit",
    stderr: "inherit",
  });
  if (seed.exitCode !== 0) throw new Error("seeding failed");
  onTheLane(join(data, "keyturn.sqlite"));
  const token = JSON.parse(
    keyturn(exe, ["admin-token", "create", "--variant", "alpha", "--data", data, "--keys", keys, "--name", "bench", "--scopes", "stats:read", "--json"]),
  ).secret as string;
  const tokens = join(data, "sample-tokens.txt");
  const serve = { exe, data, keys, releases };

  /** GET /admin/stats until it answers 200 (a build that keeps counts says 503 while its first count runs). */
  const stats = async (kt: Running) => {
    for (;;) {
      const res = await fetch(`${kt.url}/api/v1/admin/stats`, { headers: { authorization: `Bearer ${token}` } });
      const body = (await res.json()) as { rollouts?: { admitted: number }[]; ageSeconds?: number };
      if (res.status === 200) return body;
      if (res.status !== 503) throw new Error(`GET /admin/stats answered ${res.status}: ${JSON.stringify(body)}`);
      await Bun.sleep(200);
    }
  };
  const current = (seconds: number, url: string) =>
    wrk({ url, script: "tokens.lua", args: [tokens, "/api/v1/entitlements/current"], connections: CONNS, seconds });

  const rows: Record<string, number[]> = {};
  const note = (k: string, v: number) => (rows[k] ??= []).push(v);
  for (let run = 0; run < RUNS; run++) {
    // A fresh process: no kept count. Quiet p99 first, then the same load with one stats request
    // sent after a second: it waits for a whole count (the first run's also stores the buckets).
    const kt = await startKeyturn({ ...serve, port: freePort() });
    try {
      await current(2, kt.url);
      const alone = await current(SECONDS, kt.url);
      note("current p99 alone (ms)", alone.latencyUs.p99 / 1000);
      note("current max alone (ms)", alone.latencyUs.max / 1000);
      const loaded = current(SECONDS, kt.url);
      await Bun.sleep(1000);
      const cpu0 = kt.cpuMicros();
      const t0 = performance.now();
      const first = await stats(kt);
      const countMs = performance.now() - t0;
      const countCpuMs = (kt.cpuMicros() - cpu0) / 1000;
      const during = await loaded;
      note(`current p99 while a count runs (ms)`, during.latencyUs.p99 / 1000);
      // A count that holds the thread once stalls only the few requests in flight: p99 misses it, the maximum does not.
      note(`current max while a count runs (ms)`, during.latencyUs.max / 1000);
      note(run === 0 ? "first count, wall (ms)" : "count, wall (ms)", countMs);
      note(run === 0 ? "first count, server CPU incl. current load (ms)" : "count, server CPU incl. current load (ms)", countCpuMs);
      if (countMs > (SECONDS - 1) * 1000) log(`the count outlasted the current load (${countMs.toFixed(0)} ms): p99 covers only part of it`);
      if (run === 0) log(`rollouts admitted: ${first.rollouts?.map((r) => r.admitted).join(", ")}`);
      // Quiet now: the CPU of stats requests themselves (kept answers where the build keeps them).
      // 20 requests, or as many as 10 s allow (at least 2: a build that counts on every request).
      let n = 0;
      const cpu1 = kt.cpuMicros();
      const t1 = performance.now();
      while (n < 20 && (n < 2 || performance.now() - t1 < 10_000)) await stats(kt), n++;
      note("stats request, server CPU each (ms)", (kt.cpuMicros() - cpu1) / 1000 / n);
      note("stats request, wall each (ms)", (performance.now() - t1) / n);
      note("RSS after (MB)", kt.rssBytes() / 2 ** 20);
    } finally {
      await kt.stop();
    }
  }
  console.log(
    `\nGET /admin/stats, ${nLic} licences / ${nAct} installations (90 % active, on one lane), ${RAMPING} ramping releases, ${AUDIT_LINES} activations in the audit trail; ${RUNS} runs, each a fresh process\n`,
  );
  console.log("| figure | median | runs |\n|---|---|---|");
  for (const [k, v] of Object.entries(rows)) console.log(`| ${k} | ${median(v).toFixed(1)} | ${v.map((x) => x.toFixed(1)).join(", ")} |`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

/** RAMPING releases on LANE, each a 60-day ramp begun 3 to 47 days ago (shares 5 % to 78 %). */
function writeRampingReleases(root: string, releaseKeyFile: string) {
  const key = { kid: RELEASE_KID, privateKey: createPrivateKey(readFileSync(releaseKeyFile, "utf8")) };
  const installer = Buffer.from("installer\n");
  const sha256 = createHash("sha256").update(installer).digest("hex");
  for (let i = 0; i < RAMPING; i++) {
    const version = `2.${i}.0`;
    const folder = join(root, LANE.product, LANE.channel, LANE.platform, version);
    mkdirSync(folder, { recursive: true });
    const name = `alpha-${version}.exe`;
    writeFileSync(join(folder, name), installer);
    const released = new Date(Date.now() - (47 - 4 * i) * DAY).toISOString().replace(/\.\d+Z$/, "+00:00");
    const manifest = Buffer.from(
      JSON.stringify({ ...LANE, version, released, installer: name, size: installer.length, sha256, rollout: { days: 60 } }, null, 2),
    );
    writeFileSync(join(folder, variant.manifestFile), manifest);
    writeFileSync(join(folder, `${variant.manifestFile}.sig`), signManifest(manifest, key, variant));
  }
}

/** Every activation onto LANE, seen within the last 20 days; AUDIT_LINES activations audited over 30 days (1 % refused). */
function onTheLane(file: string) {
  const db = new Database(file);
  const now = Date.now();
  db.exec("PRAGMA synchronous = OFF");
  db.query("UPDATE activations SET product = ?, lane = ?, last_seen = ? - (abs(random()) % ?)").run(LANE.product, LANE_NAME, now, 20 * DAY);
  const insert = db.prepare(
    "INSERT INTO audit (ref, time, address, action, activation_id, license_id, outcome, error) VALUES (?, ?, '203.0.113.7', 'activate', NULL, NULL, ?, ?)",
  );
  db.transaction(() => {
    for (let i = 0; i < AUDIT_LINES; i++) {
      const refused = i % 100 === 0;
      insert.run(
        `ref_${randomBytes(12).toString("hex")}`,
        now - Math.floor(Math.random() * 30 * DAY),
        refused ? "refused" : "ok",
        refused ? "seat_limit" : null,
      );
    }
  })();
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  db.exec("ANALYZE");
  db.close();
}
