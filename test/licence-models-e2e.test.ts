import { afterAll, expect, test } from "bun:test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { VARIANTS } from "../src/config/variants";
import { generateKeyFiles } from "../src/domain/keys";
import { executable } from "./executable";
import { BASE_URL, device, tempDir } from "./helpers";
import { ReleaseTree } from "./release-tree";

// docs/licence-models.md "How to sell a perpetual licence", as an operator does it with the
// compiled executable: a plan in the TOML file, `license create --plan`, then `serve`; the program
// is offered the release within its window and refused the newer installer.

const dir = tempDir("keyturn-models-e2e-");
const tree = new ReleaseTree("gamma");
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  tree.remove();
});

test("a plan in the configuration, a perpetual licence from it, and the update path within its window", async () => {
  const exe = await executable();
  const v = VARIANTS.gamma;
  tree.add({ version: "1.0.0", released: "2026-09-01T00:00:00+00:00" });
  tree.add({ version: "1.1.0", released: "2026-10-01T00:00:00+00:00" });
  generateKeyFiles(tree.keysDir, v.defaultLicenseKid);
  mkdirSync(join(dir, "data"));
  const config = join(dir, "keyturn.toml");
  writeFileSync(
    config,
    [
      'variant = "gamma"',
      `base-url = "${BASE_URL}"`,
      `data = "${join(dir, "data")}"`,
      `keys = "${tree.keysDir}"`,
      `releases = "${tree.root}"`,
      'log-level = "warn"',
      "",
      "[plans.perpetual]",
      'title = "Perpetual"',
      "seats = 1",
      'channels = ["stable"]',
      'features = ["export-pdf"]',
      'updatesFor = "365d"',
      "",
    ].join("\n"),
  );
  const created = Bun.spawnSync([
    exe,
    "license",
    "create",
    "--config",
    config,
    "--licensee",
    "Ada",
    "--plan",
    "perpetual",
    "--updates-until",
    "2026-09-15T00:00:00Z",
    "--json",
  ]);
  expect(created.stderr.toString()).toBe("");
  const lic = JSON.parse(created.stdout.toString());
  expect(lic).toMatchObject({ planTitle: "Perpetual", seats: 1, expires: null, updatesUntil: "2026-09-15T00:00:00+00:00", features: ["export-pdf"] });

  const proc = Bun.spawn([exe, "serve", "--config", config, "--host", "127.0.0.1", "--port", "0", "--log-level", "info"], { stdout: "ignore", stderr: "pipe" });
  try {
    const reader = proc.stderr.getReader();
    let err = "";
    while (!err.includes('"keyturn listening"')) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`serve exited: ${err}`);
      err += new TextDecoder().decode(value);
    }
    const url = (JSON.parse(err.split("\n").find((l) => l.includes('"keyturn listening"'))!) as { url: string }).url;
    const api = (path: string, init: RequestInit = {}) => fetch(`${url}/api/v1${path}`, init);
    const activated = (await (
      await api("/licenses/activate", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ key: lic.key, device: device("gamma") }),
      })
    ).json()) as { token: string; entitlement: Record<string, unknown> };
    expect(activated.entitlement).toMatchObject({ updatesUntil: "2026-09-15T00:00:00+00:00", features: { "export-pdf": true } });
    const auth = { headers: { authorization: `Bearer ${activated.token}` } };
    // The release tree's first scan hashes the installers before they are served.
    let manifest: Response;
    for (let i = 0; ; i++) {
      manifest = await api(`/updates/stable/win-x64/${v.manifestFile}`, auth);
      if (manifest.status !== 503 || i > 100) break;
      await Bun.sleep(50);
    }
    expect(((await manifest.json()) as { version: string }).version).toBe("1.0.0");
    const refused = await api("/updates/stable/win-x64/gamma-1.1.0-win-x64.exe", auth);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: string }).error).toBe("updates_window_ended");
    expect((await api("/updates/stable/win-x64/gamma-1.0.0-win-x64.exe", auth)).status).toBe(200);
    proc.kill("SIGTERM");
    expect(await proc.exited).toBe(0);
  } finally {
    proc.kill("SIGKILL");
  }
}, 120_000);
