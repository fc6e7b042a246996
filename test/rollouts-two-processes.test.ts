import { afterAll, describe, expect, test } from "bun:test";
import { CONTROLS_POLL_MS } from "../src/store/postgres";
import { announceSkip, freshSchema, PG_URL, type TestSchema } from "./databases";
import { device } from "./helpers";
import { runCli } from "./processes";
import { ReleaseTree } from "./release-tree";
import { startServe, type ServeProcess } from "./serve-process";

// Release controls reach every process sharing the records: a withdraw made by `keyturn release
// withdraw` (a third process) makes two running servers fall back at once on SQLite, and within the
// poll interval on PostgreSQL. A new release is published once between them, and not again on restart;
// what the tree held at the first start is the baseline, announced by none.

if (!PG_URL) announceSkip("test/rollouts-two-processes.test.ts (PostgreSQL part)", "KEYTURN_TEST_POSTGRES_URL");

const schemas: TestSchema[] = [];
afterAll(async () => {
  for (const s of schemas) await s.drop();
});

async function twoServers(database: string[]) {
  const tree = new ReleaseTree("gamma");
  tree.add({ version: "1.0.0", released: "2026-11-01T00:00:00+00:00" });
  tree.add({ version: "2.0.0", released: "2026-11-10T00:00:00+00:00" });
  // startServe lays the site out in the tree's directory: releases/, keys/ (the release public key, and the license key it adds), data/.
  const a = await startServe("gamma", database, tree.dir);
  const b = await startServe("gamma", database, tree.dir);
  const admin = ["--variant", "gamma", ...(database.length > 0 ? database : ["--data", `${tree.dir}/data`]), "--keys", tree.keysDir, "--releases", tree.root];
  const created = await runCli([
    "license",
    "create",
    ...admin,
    "--licensee",
    "L",
    "--organization",
    "O",
    "--plan",
    "p",
    "--plan-title",
    "P",
    "--seats",
    "5",
    "--channels",
    "stable",
    "--json",
  ]);
  expect(created.code).toBe(0);
  const key = JSON.parse(created.stdout).key as string;
  const activated = await fetch(`${a.url}/api/v1/licenses/activate`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ key, device: device("gamma") }),
  });
  expect(activated.status).toBe(200);
  const token = ((await activated.json()) as { token: string }).token;
  const version = async (s: ServeProcess) => {
    const res = await fetch(`${s.url}/api/v1/updates/stable/win-x64/gamma-update.json`, { headers: { authorization: `Bearer ${token}` } });
    return res.status === 200 ? ((await res.json()) as { version: string }).version : String(res.status);
  };
  const control = async (op: string) => {
    const r = await runCli(["release", op, ...admin, "--lane", "stable/win-x64", "--version", "2.0.0"]);
    expect(r.code).toBe(0);
  };
  const stop = async () => {
    for (const s of [a, b]) if (s.proc.exitCode === null) s.proc.kill("SIGKILL");
    await Promise.all([a.proc.exited, b.proc.exited]);
    tree.remove();
  };
  return { tree, a, b, version, control, stop, admin };
}

const published = (s: ServeProcess) => s.lines.filter((l) => l.includes('"release published"')).map((l) => `${JSON.parse(l).lane} ${JSON.parse(l).version}`);

describe("release controls across processes", () => {
  test("SQLite: a withdraw by the CLI makes both servers fall back at once; restore brings 2.0.0 back at once", async () => {
    const s = await twoServers([]);
    try {
      expect([await s.version(s.a), await s.version(s.b)]).toEqual(["2.0.0", "2.0.0"]);
      await s.control("withdraw");
      // No waiting: the next request after the CLI exited sees it (the WAL index shows the commit).
      expect([await s.version(s.a), await s.version(s.b)]).toEqual(["1.0.0", "1.0.0"]);
      await s.control("restore");
      expect([await s.version(s.a), await s.version(s.b)]).toEqual(["2.0.0", "2.0.0"]);

      // What the tree held at the first start was published before: the baseline, announced by neither server; a restart publishes nothing either.
      await s.a.waitFor("release index built");
      await s.b.waitFor("release index built");
      await Bun.sleep(200);
      expect([...published(s.a), ...published(s.b)]).toEqual([]);
      s.a.proc.kill("SIGTERM");
      await s.a.proc.exited;
      const again = await startServe("gamma", [], s.tree.dir);
      try {
        await again.waitFor("release index built");
        await Bun.sleep(200);
        expect(published(again)).toEqual([]);
        // A new release: published once, by whichever of the two running servers records it first.
        s.tree.add({ version: "2.1.0", released: "2026-11-12T00:00:00+00:00" });
        const sawThree = (p: ServeProcess) => p.lines.some((l) => l.includes('"release index built"') && l.includes('"live":3'));
        for (let i = 0; i < 200 && !(sawThree(again) && sawThree(s.b)); i++) await Bun.sleep(25);
        await Bun.sleep(200);
        expect([...published(again), ...published(s.b)].filter((p) => p.endsWith("2.1.0"))).toEqual(["stable/win-x64 2.1.0"]);
      } finally {
        again.proc.kill("SIGKILL");
        await again.proc.exited;
      }
    } finally {
      await s.stop();
    }
  }, 60_000);

  test.skipIf(!PG_URL)(
    `PostgreSQL: both servers (polling the controls every ${CONTROLS_POLL_MS} ms) fall back after the CLI's withdraw and come back after its restore`,
    async () => {
      const schema = await freshSchema();
      schemas.push(schema);
      const s = await twoServers(["--database", schema.url]);
      try {
        expect([await s.version(s.a), await s.version(s.b)]).toEqual(["2.0.0", "2.0.0"]);
        for (const [op, expected] of [
          ["withdraw", "1.0.0"],
          ["restore", "2.0.0"],
        ] as const) {
          await s.control(op);
          // Outcome and order, not elapsed time (a busy runner stretches any bound): each server
          // falls back after the withdraw and comes back after the restore, each change before the next.
          const done = performance.now();
          const seen = await Promise.all(
            [s.a, s.b].map(async (server) => {
              while ((await s.version(server)) !== expected) {
                if (performance.now() - done > 30_000) throw new Error(`${op} not seen after 30 s`);
                await Bun.sleep(20);
              }
              return s.version(server);
            }),
          );
          expect(seen).toEqual([expected, expected]);
        }
      } finally {
        await s.stop();
      }
    },
    60_000,
  );
});
