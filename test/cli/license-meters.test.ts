import { expect, test } from "bun:test";
import { join } from "node:path";
import { cliFolder } from "../processes";

// `keyturn license create|update --meter NAME=LIMIT[/PERIOD],…` and `license show` with a licence's
// meters (design.md "Licence models": meters set by the CLI as by the admin API), and `keyturn stats`
// naming trials and metered use.

const { cwd, keyturn, json } = cliFolder("keyturn-meters-cli-");

test("--meter on create and update; show lists each meter's use; none removes them; a malformed one is a usage error", () => {
  const lic = json(
    "license",
    "create",
    "--licensee",
    "Ada",
    "--plan",
    "pro",
    "--seats",
    "1",
    "--channels",
    "stable",
    "--meter",
    "exports=500/30d,credits=1000",
  );
  const shown = json("license", "show", lic.id);
  expect(shown.meters).toEqual({
    credits: { limit: 1000, period: null, used: 0, remaining: 1000, resetsAt: null },
    exports: { limit: 500, period: "30d", used: 0, remaining: 500, resetsAt: expect.stringMatching(/\+00:00$/) },
  });
  const text = keyturn("license", "show", lic.id).stdout;
  expect(text).toContain("  meter exports: 0 of 500 used, 500 left (per 30d, resets ");
  expect(text).toContain("  meter credits: 0 of 1000 used, 1000 left (one-time pool)");

  expect(json("license", "update", lic.id, "--meter", "exports=900/1w").meters).toEqual({
    exports: { limit: 900, period: "1w", used: 0, remaining: 900, resetsAt: expect.any(String) },
  });
  expect("meters" in json("license", "update", lic.id, "--meter", "none")).toBe(false);

  const bad = keyturn("license", "create", "--licensee", "Ada", "--plan", "pro", "--seats", "1", "--channels", "stable", "--meter", "exports");
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain("NAME=LIMIT");
  const badPeriod = keyturn("license", "update", lic.id, "--meter", "exports=5/2s");
  expect(badPeriod.code).toBe(1);
  expect(badPeriod.stderr).toContain("meters.exports.period");
  // A licence without meters shows as before: no meters field.
  const plain = json("license", "create", "--licensee", "Grace", "--plan", "pro", "--seats", "1", "--channels", "stable");
  expect("meters" in json("license", "show", plain.id)).toBe(false);
}, 30_000);

test("keyturn stats names trials and metered use", () => {
  json("license", "create", "--licensee", "Ada", "--plan", "pro", "--seats", "1", "--channels", "stable", "--meter", "exports=10");
  const r = keyturn("stats", "--releases", join(cwd, "none"));
  expect(r.stdout).toContain("trials: 0 started, 0 converted to a bought licence");
  expect(r.stdout).toContain("metered use in the current periods:");
  const stats = json("stats", "--releases", join(cwd, "none"));
  expect(stats.trials).toEqual({ started: 0, converted: 0 });
  expect(stats.meters).toEqual([{ name: "exports", licenses: 1, used: 0, limit: 10, exhausted: 0 }]);
}, 30_000);
