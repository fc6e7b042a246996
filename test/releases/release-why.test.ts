import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { VARIANTS } from "../../src/config/variants";
import { CLI_CALLER } from "../../src/domain/admin/deps";
import { createAdminToken } from "../../src/domain/admin/tokens";
import { laneName } from "../../src/domain/releases/release-controls";
import { BASE_URL, createLicense, device, deviceHash } from "../helpers";
import { executable } from "../executable";
import { runCli } from "../processes";
import { releaseSite } from "../release-tree";

// design.md "Release pipeline": `keyturn release why` and GET /admin/releases/why say, for an
// installation, which release each of its lanes gives it and every rule that decided it.

const variant = "gamma";
const v = VARIANTS[variant];
const lane = laneName(null, "stable", "win-x64");
const RULE = "autoHalt: 3 of 4 installations reporting within 1h failed (75%; the rule: at least 50% of at least 4)";

interface Why {
  installation: { activation: string | null; license: string; plan: string; platform: string | null };
  lanes: {
    lane: string;
    served: string | null;
    decidedBy: { rule: string; effect: string; reason: string };
    releases: { version: string; served: boolean; steps: { rule: string; effect: string }[] }[];
  }[];
}

describe("release why", () => {
  let s: Awaited<ReturnType<typeof releaseSite>>;
  let admin: string;
  let targeted: { activation: string; license: string; dev: string; token: string };
  let other: { activation: string; license: string; dev: string; token: string };

  const activate = async (plan: string, extra: { updatesUntil?: string } = {}, hash?: string) => {
    const { key, license } = await createLicense(s.site, { channels: ["stable"], plan, ...extra });
    const d = { ...device(variant), ...(hash ? { hash } : {}) };
    const res = await s.site.request("POST", "/licenses/activate", { body: { key, device: d } });
    const { token } = (await res.json()) as { token: string };
    const claims = JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString()) as { sub: string };
    return { activation: claims.sub, license: license.id, dev: d.hash, token };
  };
  const why = async (query: string) => {
    const res = await s.site.request("GET", `/admin/releases/why?${query}`, { token: admin });
    expect(res.status).toBe(200);
    return (await res.json()) as Why;
  };
  const stable = (w: Why) => w.lanes.find((l) => l.lane === lane)!;
  const cli = (...args: string[]) =>
    runCli([
      "release",
      "why",
      ...args,
      "--variant",
      variant,
      "--base-url",
      BASE_URL,
      "--data",
      join(s.site.dir, "data"),
      "--keys",
      s.tree.keysDir,
      "--releases",
      s.tree.root,
    ]);

  beforeAll(async () => {
    s = await releaseSite(variant);
    admin = (await createAdminToken(s.site.composed.services.admin, CLI_CALLER, { name: "why", scopes: ["releases:read"] })).secret;
    targeted = await activate("basic");
    other = await activate("basic");
    s.tree.add({ version: "1.0.0", released: "2026-11-01T00:00:00+00:00" });
    s.tree.add({ version: "2.0.0", released: "2026-11-20T00:00:00+00:00", fields: { rollout: { percent: 0, targets: { licenses: [targeted.license] } } } });
    await s.holder.rescan();
  });
  afterAll(() => s.close());

  test("a targeted installation: the target rule admits it; another is left to the share; a channel outside the licence is named", async () => {
    const w = await why(`activation=${targeted.activation}`);
    expect(w.installation).toMatchObject({ activation: targeted.activation, license: targeted.license, plan: "basic", platform: "win-x64" });
    expect(stable(w).served).toBe("2.0.0");
    expect(stable(w).decidedBy).toEqual({ rule: "target", effect: "admit", reason: `licence ${targeted.license} is among the rollout's targets` });
    // Every rule asked, in order, up to the one that decided.
    expect(stable(w).releases[0]!.steps.map((x) => `${x.rule}:${x.effect}`)).toEqual([
      "withdraw:next",
      "updates-window:next",
      "feature:next",
      "halt:next",
      "staff:next",
      "target:admit",
    ]);

    const o = await why(`device=${encodeURIComponent(other.dev)}&license=${other.license}`);
    expect(o.installation.activation).toBe(other.activation);
    expect(stable(o).served).toBe("1.0.0");
    expect(stable(o).decidedBy.rule).toBe("rollout");
    expect(stable(o).decidedBy.reason).toContain("beyond the share admitted now, 0%");
    const preview = o.lanes.find((l) => l.lane === laneName(null, v.channels.find((c) => c !== "stable")!, "win-x64"))!;
    expect(preview.served).toBeNull();
    expect(preview.decidedBy.rule).toBe("channel");

    const r = await cli(targeted.activation);
    expect(r.stderr).toBe("");
    expect(`${r.code} ${r.stderr}`).toBe("0 ");
    expect(r.stdout).toContain(`${lane}: 2.0.0 (target: licence ${targeted.license} is among the rollout's targets)`);
  });

  test("a release halted by its rule: named with the rule, for an installation not running it", async () => {
    await s.site.composed.services.selection.controls.apply("halt", lane, "2.0.0", s.holder.current, undefined, RULE);
    const w = await why(`activation=${targeted.activation}`);
    expect(stable(w).served).toBe("1.0.0");
    expect(stable(w).decidedBy.rule).toBe("halt");
    expect(stable(w).decidedBy.reason).toContain(`halted by itself at`);
    expect(stable(w).decidedBy.reason).toContain(`(${RULE}): offered only to installations already running it`);
    const r = await cli("--device", targeted.dev, "--license", targeted.license, "--json");
    expect(`${r.code} ${r.stderr}`).toBe("0 ");
    const answer = JSON.parse(r.stdout) as Why;
    expect(stable(answer).decidedBy).toEqual(stable(w).decidedBy);
    const text = await cli(targeted.activation);
    expect(text.stdout).toContain(`${lane}: 1.0.0 (halt: halted by itself at`);
    expect(text.stdout).toContain("  2.0.0  passed over  halt: ");
    await s.site.composed.services.selection.controls.apply("resume", lane, "2.0.0", s.holder.current);
  });

  test("the compiled executable answers the same", async () => {
    const exe = await executable();
    const settings = ["--variant", variant, "--base-url", BASE_URL, "--data", join(s.site.dir, "data"), "--keys", s.tree.keysDir, "--releases", s.tree.root];
    const p = Bun.spawn([exe, "release", "why", other.activation, "--json", ...settings], { stdout: "pipe", stderr: "pipe", stdin: "ignore" });
    const [stdout, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
    expect(code).toBe(0);
    expect(stable(JSON.parse(stdout) as Why)).toEqual(stable(await why(`activation=${other.activation}`)));
  }, 120_000);

  test("an installation whose licence's updates ended before the release: the updates-window rule names both dates", async () => {
    const ended = await activate("basic", { updatesUntil: "2026-11-10T00:00:00Z" });
    const w = await why(`activation=${ended.activation}`);
    expect(stable(w).served).toBe("1.0.0");
    expect(stable(w).decidedBy).toEqual({
      rule: "updates-window",
      effect: "pass",
      reason: "released on 2026-11-20, after the licence's updates ended on 2026-11-10",
    });
    expect(stable(w).releases[1]!.steps.find((x) => x.rule === "updates-window")).toMatchObject({ effect: "next" });
    // The update path agrees.
    const res = await s.site.request("GET", `/updates/${lane}/${v.manifestFile}`, { token: ended.token });
    expect((JSON.parse(await res.text()) as { version: string }).version).toBe("1.0.0");
    const text = await cli(ended.activation);
    expect(text.stdout).toContain(`${lane}: 1.0.0 (updates-window: released on 2026-11-20, after the licence's updates ended on 2026-11-10)`);
  });

  test("a withdrawn release, and refusals in words", async () => {
    await s.site.composed.services.selection.controls.apply("withdraw", lane, "2.0.0", s.holder.current);
    const w = await why(`activation=${targeted.activation}`);
    expect(stable(w).served).toBe("1.0.0");
    expect(stable(w).decidedBy.rule).toBe("withdraw");
    await s.site.composed.services.selection.controls.apply("restore", lane, "2.0.0", s.holder.current);
    for (const [query, status] of [
      ["", 400],
      [`activation=${targeted.activation}&license=${targeted.license}`, 400],
      ["activation=act_nothing", 404],
    ] as const) {
      const res = await s.site.request("GET", `/admin/releases/why?${query}`, { token: admin });
      expect(res.status).toBe(status);
    }
    const usage = await cli();
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("release why needs an ACTIVATION, or --device and --license");
  });

  test("a device hash beginning with '-' (base64url: one in 64) is --device's value, as support pastes it", async () => {
    let hash = deviceHash(variant);
    while (!hash.startsWith("-")) hash = deviceHash(variant);
    const dashed = await activate("basic", {}, hash);
    const r = await cli("--device", hash, "--license", dashed.license, "--json");
    expect(`${r.code} ${r.stderr}`).toBe("0 ");
    expect((JSON.parse(r.stdout) as Why).installation.activation).toBe(dashed.activation);
  });

  test("a release tree that cannot be read: one line naming it, exit 1, no stack trace", async () => {
    const settings = ["--variant", variant, "--base-url", BASE_URL, "--data", join(s.site.dir, "data"), "--keys", s.tree.keysDir];
    const r = await runCli(["release", "why", targeted.activation, ...settings, "--releases", "/nonexistent/tree"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("keyturn: cannot read the release tree /nonexistent/tree (ENOENT)\n");
  });
});
