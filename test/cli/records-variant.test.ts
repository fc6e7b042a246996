import { afterAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { announceSkip, freshSchema, PG_URL } from "../databases";
import { tempDir } from "../helpers";
import { postgresRecordsAt, sqliteRecordsAt } from "../old-records";
import { runCli, siteArgs, siteDirs, startServe } from "../processes";

if (!PG_URL) announceSkip("test/cli/records-variant.test.ts", "KEYTURN_TEST_POSTGRES_URL");

const dir = tempDir("keyturn-records-variant-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Records of migration 10 (before the variant was noted) are given their variant by the first
 * start; then serve, migrate and the admin commands of another variant refuse them, naming it.
 */
async function expectNotedAndGuarded(root: string, records: string[], kind: string) {
  const dirs = siteDirs(root, "alpha");
  const alpha = [...siteArgs("alpha", dirs), ...records];
  const serve = await startServe(alpha);
  expect(await serve.stop()).toBe(0);

  const beta = [...siteArgs("beta", dirs), ...records];
  const refusal = new RegExp(
    `^keyturn: --variant: these records \\(${kind}\\) are variant alpha's, noted at their first start on \\d{4}-\\d\\d-\\d\\dT[0-9:.]+Z: ` +
      "start with --variant alpha, or give beta records of its own \\(another --data or --database\\)\n$",
  );
  for (const command of [
    ["serve", ...beta],
    ["migrate", ...beta],
    ["license", "list", ...beta],
  ]) {
    const r = await runCli(command);
    expect([command[0], r.code]).toEqual([command[0], 2]);
    expect(r.stderr).toMatch(refusal);
    expect(r.stdout).toBe("");
  }
  // Alpha's own commands still work on them.
  const own = await runCli(["license", "list", "--json", ...alpha]);
  expect(own.stderr).toBe("");
  expect(own.code).toBe(0);
}

test("SQLite: the first start notes the variant in records that had none; beta's serve, migrate and license list refuse alpha's", async () => {
  const root = join(dir, "sqlite");
  sqliteRecordsAt(join(root, "data"), 10);
  await expectNotedAndGuarded(root, [], "sqlite");
}, 60_000);

describe.skipIf(!PG_URL)("PostgreSQL", () => {
  test("the first start notes the variant in a schema that had none; beta's serve, migrate and license list refuse alpha's", async () => {
    const schema = await freshSchema();
    try {
      await postgresRecordsAt(schema.url, 10);
      await expectNotedAndGuarded(join(dir, "postgres"), ["--database", schema.url], "postgres");
    } finally {
      await schema.drop();
    }
  }, 60_000);
});
