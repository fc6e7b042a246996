import { expect, test } from "bun:test";
import { cliFolder } from "../processes";

// `license create|update --seat-lease` and what `license show` and `stats` say of it (design.md
// "Seats that come back"). A bad value is a usage error naming the flag: exit 2, nothing written.
const { keyturn } = cliFolder("keyturn-cli-lease-");
const LICENSE = ["--licensee", "Ada", "--organization", "Engines", "--plan", "pro", "--plan-title", "Pro", "--seats", "2", "--channels", "stable"];

test("--seat-lease on create and update; show prints it; too short or malformed exits 2 naming --seat-lease", () => {
  const short = keyturn("license", "create", ...LICENSE, "--seat-lease", "30s");
  expect(short.code).toBe(2);
  expect(short.stderr).toContain("--seat-lease: seatLease must be at least 1m");
  expect(keyturn("license", "list", "--json").stdout).toContain('"licenses": []');
  expect(keyturn("license", "create", ...LICENSE, "--seat-lease", "a month").code).toBe(2);

  const created = JSON.parse(keyturn("license", "create", ...LICENSE, "--seat-lease", "30d", "--json").stdout);
  expect(created.seatLease).toBe("30d");
  const shown = keyturn("license", "show", created.id);
  expect(shown.stdout).toContain("seat lease 30d");
  expect(JSON.parse(keyturn("license", "update", created.id, "--seat-lease", "10m", "--json").stdout).seatLease).toBe("10m");
  expect(keyturn("license", "update", created.id, "--seat-lease", "59s").code).toBe(2);
  const none = JSON.parse(keyturn("license", "update", created.id, "--seat-lease", "none", "--json").stdout);
  expect(none.seatLease).toBeNull();
  expect(keyturn("license", "show", created.id).stdout).not.toContain("seat lease");
});
