import { afterAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { generateKeyFiles } from "../../src/domain/keys";
import { openSqliteStore } from "../../src/store/sqlite";
import { deviceHash, tempDir } from "../helpers";
import { ReleaseTree } from "../release-tree";

const ROOT = resolve(import.meta.dir, "../..");
const MAIN = join(ROOT, "src/main.ts");
const trees: ReleaseTree[] = [];
afterAll(() => trees.forEach((t) => t.remove()));

async function run(args: string[]) {
  const proc = Bun.spawn([process.execPath, MAIN, ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe", env: { ...process.env, KEYTURN_VARIANT: undefined } });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { stdout, stderr, code };
}

const tree = (variant: "alpha" | "beta" | "gamma" = "alpha") => {
  const t = new ReleaseTree(variant);
  trees.push(t);
  return t;
};

const MALFORMED: [string, unknown, string][] = [
  ["negative", { percent: -5 }, "manifest rollout percent must be a number from 0 to 100"],
  ["over-100", { percent: 101 }, "manifest rollout percent must be a number from 0 to 100"],
  ["both", { percent: 10, days: 3 }, "manifest rollout must have exactly one of percent or days"],
  ["wrong-type", { days: "3" }, "manifest rollout days must be a number above 0"],
  ["unknown-field", { percent: 10, cohort: "a" }, 'manifest rollout has an unknown field "cohort"'],
];

describe("a malformed rollout keeps the folder out", () => {
  test("release check names each such folder with its reason and exits non-zero; a good rollout is live", async () => {
    const t = tree();
    t.add({ version: "1.0.0", fields: { rollout: { percent: 10 } } });
    t.add({ version: "1.1.0", fields: { rollout: { days: 2.5 } } });
    for (const [name, rollout] of MALFORMED) t.add({ version: "2.0.0", folder: name, fields: { rollout } });
    const { stdout, code } = await run(["release", "check", "--releases", t.root, "--keys", t.keysDir, "--variant", "alpha"]);
    expect(code).toBe(1);
    expect(stdout).toContain("live     alpha/stable/win-x64/1.0.0  (1.0.0)");
    expect(stdout).toContain("live     alpha/stable/win-x64/1.1.0  (1.1.0)");
    for (const [name, , reason] of MALFORMED) expect(stdout).toContain(`PROBLEM  alpha/stable/win-x64/${name}: ${reason}`);
    expect(stdout).toContain(`2 live, ${MALFORMED.length} with problems`);
  });

  test("release sign refuses such a manifest and writes no signature", async () => {
    const t = tree("gamma");
    for (const [name, rollout, reason] of MALFORMED) {
      const r = t.add({ version: "2.0.0", folder: name, sign: false, fields: { rollout } });
      const { stderr, code } = await run(["release", "sign", "--key", t.privateKeyFile, r.manifestPath]);
      expect(code).toBe(1);
      expect(stderr).toContain(reason);
      expect(existsSync(`${r.manifestPath}.sig`)).toBe(false);
    }
    const good = t.add({ version: "2.1.0", sign: false, fields: { rollout: { percent: 5 } } });
    expect((await run(["release", "sign", "--key", t.privateKeyFile, good.manifestPath])).code).toBe(0);
  });
});

describe("release check and the release keys", () => {
  test("release check on the build machine: with the release keys' directory (private .pem only) it checks signatures; with no release key it fails loudly", async () => {
    const t = tree("gamma");
    t.add({ version: "1.0.0" });
    const signed = await run(["release", "check", "--releases", t.root, "--keys", dirname(t.privateKeyFile), "--variant", "gamma"]);
    expect(signed.code).toBe(0);
    expect(signed.stdout).toContain("live     stable/win-x64/1.0.0  (1.0.0)");
    // A manifest changed after signing is caught with those keys.
    const other = tree("gamma");
    const r = other.add({ version: "1.0.0" });
    writeFileSync(r.manifestPath, readFileSync(r.manifestPath, "utf8").replace("\n}", ',\n  "notes": "changed"\n}'));
    const changed = await run(["release", "check", "--releases", other.root, "--keys", dirname(other.privateKeyFile), "--variant", "gamma"]);
    expect(changed.code).toBe(1);
    expect(changed.stdout).toContain("PROBLEM  stable/win-x64/1.0.0: signature");
    const none = tempDir();
    generateKeyFiles(none, "gamma-license-2026-09");
    const unchecked = await run(["release", "check", "--releases", t.root, "--keys", none, "--variant", "gamma"]);
    expect(unchecked.code).toBe(1);
    expect(unchecked.stderr).toContain(`no gamma-release-* key (.pub.pem or .pem) in ${none}: signatures cannot be checked`);
  });
});

describe("keyturn release halt|resume|withdraw|restore", () => {
  test("each changes the control in the records once, says so, and writes an audit line", async () => {
    const data = tempDir();
    const common = ["--variant", "beta", "--data", data, "--lane", "beta-studio/preview/win-x64", "--version", "3.0.0"];
    const known = openSqliteStore(data);
    await known.recordKnownReleases([{ lane: "beta-studio/preview/win-x64", version: "3.0.0" }], Date.now());
    await known.close();
    const halt = await run(["release", "halt", ...common]);
    expect(halt.code).toBe(0);
    expect(halt.stdout).toMatch(/^beta-studio\/preview\/win-x64 3\.0\.0: halted \(halted since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00\)\n$/);
    expect((await run(["release", "halt", ...common])).stdout).toContain(": already halted");
    const withdraw = await run(["release", "withdraw", ...common, "--json"]);
    expect(JSON.parse(withdraw.stdout)).toMatchObject({ changed: true, release: { lane: "beta-studio/preview/win-x64", version: "3.0.0" } });
    expect((await run(["release", "resume", ...common])).stdout).toContain(": resumed (running, withdrawn since");
    expect((await run(["release", "restore", ...common])).stdout).toContain(": restored (running)");

    const store = openSqliteStore(data);
    try {
      expect(await store.listReleaseControls()).toEqual([
        expect.objectContaining({ lane: "beta-studio/preview/win-x64", version: "3.0.0", halted: null, withdrawn: null }) as never,
      ]);
      // One audit line and one event per change, written with it; the repeated halt changed nothing.
      const lines = await store.listAudit({});
      expect(lines.map((l) => l.action).sort()).toEqual(["release-halt", "release-restore", "release-resume", "release-withdraw"]);
      expect(new Set(lines.map((l) => l.actor))).toEqual(new Set(["cli"]));
      const events = await store.listEvents({ after: 0, limit: 100, types: ["release.halted", "release.resumed", "release.withdrawn", "release.restored"] });
      expect(events.map((e) => e.type)).toEqual(["release.halted", "release.withdrawn", "release.resumed", "release.restored"]);
      expect(JSON.parse(events[1]!.data)).toEqual({ release: { lane: "beta-studio/preview/win-x64", version: "3.0.0" }, share: null });
    } finally {
      await store.close();
    }
  });

  test("a version or lane this site does not know is refused on every control (exit 1, naming what exists); nothing is written", async () => {
    const data = tempDir();
    const lane = "stable/win-x64";
    const seed = openSqliteStore(data);
    await seed.recordKnownReleases(
      [
        { lane, version: "2.1.0" },
        { lane, version: "2.0.0" },
      ],
      Date.now(),
    );
    await seed.close();
    for (const op of ["halt", "resume", "withdraw", "restore"]) {
      const r = await run(["release", op, "--variant", "gamma", "--data", data, "--lane", lane, "--version", "2.1"]);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe("");
      expect(r.stderr).toContain("stable/win-x64 has no release 2.1; its releases: 2.1.0, 2.0.0.");
    }
    const empty = await run(["release", "withdraw", "--variant", "gamma", "--data", data, "--lane", "preview/win-x64", "--version", "2.1.0"]);
    expect(empty.code).toBe(1);
    expect(empty.stderr).toContain("preview/win-x64 has no releases");
    // A withdrawn release whose folder was later removed is still known, so it can be restored.
    expect((await run(["release", "withdraw", "--variant", "gamma", "--data", data, "--lane", lane, "--version", "2.0.0"])).code).toBe(0);
    const store = openSqliteStore(data);
    try {
      expect((await store.listAudit({})).map((l) => l.action)).toEqual(["release-withdraw"]);
      expect(
        (await store.listEvents({ after: 0, limit: 100, types: ["release.withdrawn", "release.halted", "release.resumed", "release.restored"] })).length,
      ).toBe(1);
      expect((await store.listReleaseControls()).map((c) => c.version)).toEqual(["2.0.0"]);
    } finally {
      await store.close();
    }
  });

  test("a lane not of the variant is refused (exit 1); missing flags are a usage error (exit 2)", async () => {
    const data = tempDir();
    const bad = await run(["release", "withdraw", "--variant", "gamma", "--data", data, "--lane", "alpha/stable/win-x64", "--version", "1.0.0"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("lane must be channel/platform of gamma");
    const missing = await run(["release", "withdraw", "--variant", "gamma", "--data", data, "--version", "1.0.0"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("release withdraw needs --lane and --version");
  });
});

describe("keyturn stats", () => {
  test("installations by lane and version, a rollout's reach, activations per day, licenses expiring; human output escapes control characters", async () => {
    const t = tree("gamma");
    t.add({ version: "1.0.0", released: "2026-01-01T00:00:00+00:00" });
    t.add({ version: "2.0.0", released: "2026-02-01T00:00:00+00:00", fields: { rollout: { percent: 30 } } });
    const data = tempDir();
    mkdirSync(data, { recursive: true });
    const now = Date.now();
    const store = openSqliteStore(data);
    const devices: string[] = [];
    try {
      await store.createLicense({
        id: "lic_stats",
        kind: "license",
        keyHash: "k",
        licensee: "Evil\u001b[31mCorp",
        organization: "O",
        plan: "p",
        planTitle: "P",
        channels: ["stable"],
        seats: 100,
        issued: now,
        expires: now + 5 * 86_400_000,
        revoked: null,
      });
      for (let i = 0; i < 40; i++) {
        const hash = deviceHash("gamma");
        devices.push(hash);
        const id = `act_s${i}`;
        await store.activate({
          licenseId: "lic_stats",
          kind: "license",
          installation: hash,
          deviceHash: hash,
          product: null,
          name: "n",
          platform: "win-x64",
          version: i < 10 ? "2.0.0" : "1.0.0",
          newId: id,
          now,
          audit: { ref: `ref_${i}`, time: now, address: null, action: "activate", licenseId: "lic_stats", outcome: "ok", error: null },
        });
        await store.recordSightings([{ activationId: id, lastSeen: now, lane: "stable/win-x64" }]);
      }
      await store.writeAudit({
        ref: "ref_refused",
        time: now,
        address: null,
        action: "activate",
        activationId: null,
        licenseId: "lic_stats",
        outcome: "refused",
        error: "seat_limit",
      });
    } finally {
      await store.close();
    }
    const admitted = devices.filter(
      (d) => BigInt("0x" + createHash("sha256").update(`${d}:stable/win-x64:2.0.0`).digest("hex").slice(0, 16)) * 100n < 30n * (1n << 64n),
    ).length;
    const common = ["--variant", "gamma", "--data", data, "--releases", t.root, "--keys", t.keysDir];

    const json = await run(["stats", ...common, "--json"]);
    expect(json.code).toBe(0);
    const stats = JSON.parse(json.stdout);
    expect(stats.installations).toEqual([
      { product: null, lane: "stable/win-x64", channel: "stable", version: "1.0.0", installations: 30 },
      { product: null, lane: "stable/win-x64", channel: "stable", version: "2.0.0", installations: 10 },
    ]);
    expect(stats.rollouts).toEqual([{ lane: "stable/win-x64", version: "2.0.0", share: 30, halted: null, withdrawn: null, seen: 40, admitted }]);
    expect(stats.activationsPerDay).toHaveLength(30);
    expect(stats.activationsPerDay.at(-1)).toEqual({ day: new Date(now).toISOString().slice(0, 10), activations: 40, seatLimitRefusals: 1 });
    expect(stats.expiringLicenses).toEqual([expect.objectContaining({ id: "lic_stats", licensee: "Evil\u001b[31mCorp" })]);

    const human = await run(["stats", ...common]);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(`stable/win-x64 2.0.0: share 30 %, admits ${admitted} of 40 installations seen on the lane`);
    expect(human.stdout).toContain("Evil\\x1b[31mCorp");
    expect(human.stdout).not.toContain("\u001b");
  });
});
