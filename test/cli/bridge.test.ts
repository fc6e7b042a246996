import { afterAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { tempDir } from "../helpers";
import { runCli, siteArgs, siteDirs } from "../processes";

// docs/commerce.md, "Coming from the Stripe example": run once on the site's records. What it adopts
// is tested through the bridge in test/http/commerce-bridges.test.ts; here, the command itself.
const root = tempDir();
afterAll(() => rmSync(root, { recursive: true, force: true }));

test("bridge adopt-stripe-example: on records the example never wrote, nothing to adopt (exit 0); an unknown subcommand is a usage error (exit 2)", async () => {
  const site = siteArgs("alpha", siteDirs(root, "alpha"));
  const products = ["--bridge-products", JSON.stringify({ stripe: { price_pro: { plan: "pro" } } })];
  const created = await runCli(["license", "create", ...site, "--licensee", "Ada", "--plan", "pro", "--seats", "1", "--channels", "stable"]);
  expect(created.code).toBe(0);
  const plain = await runCli(["bridge", "adopt-stripe-example", ...site, ...products]);
  expect([plain.code, plain.stdout.trim()]).toEqual([0, "no licence of the Stripe example left to adopt"]);
  const json = await runCli(["bridge", "adopt-stripe-example", ...site, ...products, "--json"]);
  expect(JSON.parse(json.stdout)).toEqual({ adopted: [] });
  const wrong = await runCli(["bridge", "adopt", ...site]);
  expect(wrong.code).toBe(2);
  expect(wrong.stderr).toContain('unknown bridge command "adopt"');
});
