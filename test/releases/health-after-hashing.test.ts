import { afterAll, expect, test } from "bun:test";
import { join } from "node:path";
import { device } from "../helpers";
import { ReleaseTree } from "../release-tree";
import { startServe, type ServeProcess } from "../serve-process";

// Issue 20: a fresh start answered an installer still being hashed with 503 while /health already
// said ok. /health is not ready until the installers the first scan found are hashed, so a client
// that waits for health and then downloads gets its bytes.
let serve: ServeProcess | undefined;
afterAll(async () => serve?.cleanup());

test("a fresh serve process: once /health says ok, a 24 MiB installer found at start downloads whole", async () => {
  const tree = new ReleaseTree("gamma");
  // Above the size hashed during the scan (1 MiB): hashed in the background after the first scan.
  const bytes = new Uint8Array(24 << 20).map((_, i) => i * 7);
  const r = tree.add({ version: "1.0.0", installerBytes: bytes });
  const cli = Bun.spawnSync([
    process.execPath,
    join(import.meta.dir, "..", "..", "src", "main.ts"),
    "license",
    "create",
    "--variant",
    "gamma",
    "--data",
    join(tree.dir, "data"),
    "--licensee",
    "Ada",
    "--organization",
    "Ada Ltd",
    "--plan",
    "p",
    "--plan-title",
    "P",
    "--seats",
    "2",
    "--channels",
    "stable",
    "--json",
  ]);
  const key = (JSON.parse(cli.stdout.toString()) as { key: string }).key;
  serve = await startServe("gamma", [], tree.dir);
  const api = `${serve.url}/api/v1`;

  const healthAnswers: number[] = [];
  const deadline = Date.now() + 30_000;
  for (;;) {
    const health = await fetch(`${api}/health`);
    healthAnswers.push(health.status);
    const body = (await health.json()) as { ok: boolean; error?: string };
    if (health.status === 200) break;
    expect(body.error).toBe("unavailable");
    if (Date.now() > deadline) throw new Error(`not ready in 30 s: ${healthAnswers.join(",")}`);
    await Bun.sleep(10);
  }
  const activated = await fetch(`${api}/licenses/activate`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ key, device: device("gamma") }),
  });
  expect(activated.status).toBe(200);
  const { token } = (await activated.json()) as { token: string };
  const download = await fetch(`${api}/updates/${r.lane}/${r.installer}`, { headers: { authorization: `Bearer ${token}` } });
  expect(download.status).toBe(200);
  expect(Buffer.from(await download.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true);
  // The hashing was still running when the first health check came (else this proves nothing).
  expect(healthAnswers[0]).toBe(503);
}, 60_000);
