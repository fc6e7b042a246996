import { afterAll, beforeAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { executable } from "./executable";
import { VARIANTS } from "../src/config/variants";
import { tempDir } from "./helpers";
import { freePort } from "./processes";

let dir: string;
let exe: string;
beforeAll(async () => {
  dir = tempDir("keyturn-e2e-");
  exe = await executable();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("the compiled demo starts from an empty directory, prints a license and a curl that activates", async () => {
  const cwd = join(dir, "empty");
  require("node:fs").mkdirSync(cwd);
  const port = await freePort();
  const server = Bun.spawn([exe, "serve", "--demo", "--variant", "gamma", "--port", String(port)], { cwd, stdout: "pipe", stderr: "pipe" });
  try {
    const reader = server.stdout.getReader();
    let out = "";
    while (!out.includes("curl -s")) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`demo exited early: ${out}`);
      out += new TextDecoder().decode(value);
    }
    while (!out.split("curl -s")[1]!.includes("\n")) out += new TextDecoder().decode((await reader.read()).value);
    expect(out).toContain("DEVELOPMENT KEYS");
    const key = /demo license: (GA(-[0-9A-Z]{5}){5})/.exec(out)![1]!;
    const body = /-d '(.+)'/.exec(out)![1]!;
    expect(JSON.parse(body).key).toBe(key);
    const r = await fetch(`http://127.0.0.1:${port}/api/v1/licenses/activate`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    expect(r.status).toBe(200);
    const answer = (await r.json()) as any;
    expect(answer.entitlement).toMatchObject({ licensee: "Demo User", seats: { used: 1, total: 3 } });
    const current = await fetch(`http://127.0.0.1:${port}/api/v1/entitlements/current`, { headers: { authorization: `Bearer ${answer.token}` } });
    expect(current.status).toBe(200);
    // Outside a checkout the demo serves the example tree built into the executable (signed, checked), not an empty one.
    const releases = await fetch(`http://127.0.0.1:${port}/api/v1/releases`, { headers: { authorization: `Bearer ${answer.token}` } });
    const listed = ((await releases.json()) as { releases: { version: string }[] }).releases.map((r) => r.version);
    expect(listed).toEqual(expect.arrayContaining(["2.1.0", "2.0.0"]));
    const manifest = await fetch(`http://127.0.0.1:${port}/api/v1/updates/stable/win-x64/${VARIANTS.gamma.manifestFile}`, {
      headers: { authorization: `Bearer ${answer.token}` },
    });
    expect(manifest.status).toBe(200);
    server.kill("SIGTERM");
    expect(await server.exited).toBe(0);
  } finally {
    server.kill("SIGKILL");
  }
});
