/**
 * How long `keyturn copy` (and the --merge pass made during the write pause) takes for a vendor of a
 * given size: LICENSES licenses with one activation each, and ten audit lines per license.
 *   KEYTURN_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test bun bench/copy.ts [licenses]
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { openSqliteStore } from "../src/store/sqlite";
import { tempDir } from "../test/helpers";
import { freshSchema, PG_URL } from "../test/databases";

if (!PG_URL) {
  console.error("set KEYTURN_TEST_POSTGRES_URL (e.g. postgres://postgres@127.0.0.1:5432/test)");
  process.exit(2);
}
const LICENSES = Number(process.argv[2] ?? 10_000);
const MAIN = join(import.meta.dir, "..", "src", "main.ts");

const dir = tempDir("keyturn-bench-copy-");
const schema = await freshSchema();
try {
  const source = openSqliteStore(dir);
  const t = Date.parse("2026-01-01T00:00:00Z");
  source.db.transaction(() => {
    const lic = source.db.prepare(`INSERT INTO licenses VALUES (?, 'license', ?, 'Bench', 'Bench Ltd', 'pro', 'Professional', '["stable"]', 3, ?, NULL, NULL)`);
    const act = source.db.prepare(`INSERT INTO activations VALUES (?, ?, 'license', ?, ?, NULL, 'PC', 'win-x64', '1.0.0', ?, ?, NULL)`);
    const audit = source.db.prepare(`INSERT INTO audit VALUES (?, ?, '203.0.113.7', 'refresh', ?, ?, 'ok', NULL)`);
    for (let i = 0; i < LICENSES; i++) {
      lic.run(`lic_${i}`, `hash_${i}`, t + i);
      act.run(`act_${i}`, `lic_${i}`, `inst_${i}`, `dev_${i}`, t + i, t + i);
      for (let j = 0; j < 10; j++) audit.run(`ref_${i}_${j}`, t + i * 10 + j, `act_${i}`, `lic_${i}`);
    }
  })();
  await source.close();

  for (const pass of [[], ["--merge"]]) {
    const started = performance.now();
    const p = Bun.spawnSync([process.execPath, MAIN, "copy", "--from", dir, "--to", schema.url, ...pass], { stdout: "pipe", stderr: "pipe" });
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.log(`copy ${pass.join(" ") || "(first pass)"}: ${seconds} s — ${(p.stdout.toString() || p.stderr.toString()).trim()}`);
  }
} finally {
  await schema.drop();
  rmSync(dir, { recursive: true, force: true });
}
