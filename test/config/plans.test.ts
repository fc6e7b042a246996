import { afterAll, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readSettings, toConfig } from "../../src/config/config";
import { ConfigError } from "../../src/config/parse";
import { BASE_URL, tempDir } from "../helpers";
import { runCli, siteArgs, siteDirs } from "../processes";

// design.md "Licence models": plans are `[plans.NAME]` tables in the TOML configuration (seats,
// channels, features, seatLease, tokenTtl, updatesFor, expiresAfter).

const dir = tempDir();
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

/** The configuration a TOML file with these lines gives, read the way every command reads it. */
function configOf(toml: string) {
  const path = join(dir, `keyturn-${++files}.toml`);
  writeFileSync(path, `variant = "alpha"\nbase-url = "${BASE_URL}"\ndata = "${join(dir, "data")}"\n${toml}`);
  const read = readSettings(["--config", path], {});
  return toConfig(read.settings, "admin", read.tables);
}

function refusal(toml: string): string {
  try {
    configOf(toml);
  } catch (e) {
    if (e instanceof ConfigError) return `${e.setting}: ${e.message}`;
    throw e;
  }
  throw new Error(`accepted ${toml}`);
}

test("every key of a plan is read, durations in seconds; a site without plans has none", () => {
  const config = configOf(`
[plans.pro]
title = "Pro"
seats = 3
channels = ["stable", "preview"]
features = ["export-pdf", "max-projects=50"]
seatLease = "30d"
tokenTtl = "14d"
updatesFor = "365d"
expiresAfter = "2w"

[plans.perpetual]
seats = 1
updatesFor = "365d"
`);
  expect(config.plans.get("pro")).toEqual({
    name: "pro",
    title: "Pro",
    seats: 3,
    channels: ["stable", "preview"],
    features: ["export-pdf", "max-projects=50"],
    seatLease: "30d",
    tokenTtl: 14 * 86_400,
    updatesFor: 365 * 86_400,
    expiresAfter: 14 * 86_400,
  });
  expect(config.plans.get("perpetual")).toMatchObject({ seats: 1, channels: null, features: null, updatesFor: 365 * 86_400, expiresAfter: null });
  expect(configOf("").plans.size).toBe(0);
  // Plans come from the file only; the settings beside them are read as before.
  expect(configOf('token-ttl = "3d"\n[plans.x]\nseats = 2').tokenTtlSeconds).toBe(3 * 86_400);
});

test("each mistake in a plan is refused naming the plan and its key", () => {
  expect(refusal("[plans.pro]\nseat = 3")).toBe(
    'config: [plans.pro] has an unknown key "seat" (known: title, seats, channels, features, seatLease, tokenTtl, updatesFor, expiresAfter)',
  );
  expect(refusal("[plans.pro]\nseats = 0")).toBe("config: [plans.pro] seats must be a whole number from 1 to 1000000000 (got 0)");
  expect(refusal('[plans.pro]\nseats = "3"')).toBe('config: [plans.pro] seats must be a whole number from 1 to 1000000000 (got "3")');
  expect(refusal('[plans.pro]\nchannels = ["nightly"]')).toBe('config: [plans.pro] channels names "nightly", not among the site\'s channels (stable, preview)');
  expect(refusal('[plans.pro]\nchannels = "stable"')).toBe('config: [plans.pro] channels must be a list of channel names, such as ["stable"] (got "stable")');
  expect(refusal('[plans.pro]\nfeatures = ["Export PDF"]')).toStartWith('config: [plans.pro] features: "Export PDF" is not a feature');
  expect(refusal('[plans.pro]\nfeatures = ["a=1", "a=2"]')).toBe('config: [plans.pro] features names the feature "a" twice');
  expect(refusal('[plans.pro]\nupdatesFor = "a year"')).toBe('config: [plans.pro] updatesFor: malformed duration "a year" (use e.g. 600s, 10m, 12h, 7d)');
  expect(refusal("[plans.pro]\nupdatesFor = 365")).toBe('config: [plans.pro] updatesFor must be a duration in quotes, such as "365d" (got 365)');
  expect(refusal('[plans.pro]\nexpiresAfter = "9999d"')).toBe('config: [plans.pro] expiresAfter: must be at most 3660d (got "9999d")');
  expect(refusal('[plans.pro]\ntokenTtl = "400d"')).toBe('config: [plans.pro] tokenTtl: must be at most 366d (got "400d")');
  expect(refusal('[plans.pro]\nseatLease = "30s"')).toBe(
    'config: [plans.pro] seatLease must be a duration with its unit from 60s to 366d, such as 30d (got "30s")',
  );
  expect(refusal('[plans.pro]\ntitle = ""')).toBe('config: [plans.pro] title must be text of 1 to 200 characters without control characters (got "")');
  expect(refusal('[plans."two words"]\nseats = 1')).toBe(
    "config: [plans.two words] is not a plan name (letters, digits, dots, dashes and underscores, at most 64 characters)",
  );
  expect(refusal("plans = 3")).toBe("config: plans must be tables, one [plans.NAME] for each plan");
  expect(refusal("[plans]\npro = 3")).toBe("config: plans.pro must be a table ([plans.NAME] with its keys below it)");
  // A channel the site adds is a plan's channel too.
  expect(configOf('channels = "stable,beta"\n[plans.pro]\nchannels = ["beta"]').plans.get("pro")!.channels).toEqual(["beta"]);
});

test("keyturn serve with a bad plan exits 2 with one line naming the key", async () => {
  const dirs = siteDirs(join(dir, "site"), "alpha");
  const path = join(dir, "bad-plan.toml");
  writeFileSync(path, "[plans.pro]\nseats = -1\n");
  const r = await runCli(["serve", ...siteArgs("alpha", dirs), "--port", "0", "--config", path]);
  expect(r.code).toBe(2);
  expect(r.stderr.trim().split("\n")).toEqual(["keyturn: --config: [plans.pro] seats must be a whole number from 1 to 1000000000 (got -1)"]);
});
