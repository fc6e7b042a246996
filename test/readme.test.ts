import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { envName, SETTINGS } from "../src/config/settings";

const readme = readFileSync(join(import.meta.dir, "..", "README.md"), "utf8");

test("README documents every setting with its flag, environment variable and default", () => {
  for (const s of SETTINGS) {
    const row = readme.split("\n").find((l) => l.startsWith(`| \`--${s.flag}\` |`));
    expect(row, `README row for --${s.flag}`).toBeDefined();
    expect(row).toContain(envName(s.flag));
    if (s.default) expect(row).toContain(`\`${s.default}\``);
  }
});

test("README names the two commands, and .ci/run runs the README's test command", () => {
  expect(readme).toContain("npm run demo");
  expect(readme).toContain("npm test");
  const ci = readFileSync(join(import.meta.dir, "..", ".ci", "run"), "utf8");
  const pkg = JSON.parse(readFileSync(join(import.meta.dir, "..", "package.json"), "utf8"));
  expect(ci).toContain("bun run test");
  expect(pkg.scripts.test).toContain("bun@1.4.5 test");
});
