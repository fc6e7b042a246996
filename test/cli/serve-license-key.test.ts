import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { generateKeyFiles, looseMode } from "../../src/domain/keys";
import { tempDir } from "../helpers";

// docs/operating.md "Signing keys and rotation": a license key that is there but cannot be used
// stops `serve` (exit 2, naming the file and why) instead of leaving licensing off behind a warning.
const MAIN = resolve(import.meta.dir, "../../src/main.ts");
const KID = "gamma-license-2026-09";
const NOBODY = 65534;
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function site() {
  const dir = tempDir("keyturn-keyfile-");
  dirs.push(dir);
  chmodSync(dir, 0o755);
  for (const d of ["keys", "releases", "data"]) mkdirSync(join(dir, d), { mode: 0o755 });
  chmodSync(join(dir, "data"), 0o777);
  return { dir, keys: join(dir, "keys") };
}

/** `keyturn serve` on port 0, as this user or (prefix) another; resolves with its exit code, or "listening" (then stopped). */
async function serve(dir: string, prefix: string[] = []) {
  const proc = Bun.spawn(
    [
      ...prefix,
      process.execPath,
      MAIN,
      "serve",
      "--variant",
      "gamma",
      "--base-url",
      "https://licenses.example.com",
      "--port",
      "0",
      "--data",
      join(dir, "data"),
      "--keys",
      join(dir, "keys"),
      "--releases",
      join(dir, "releases"),
    ],
    { stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { PATH: process.env.PATH, HOME: "/tmp" } },
  );
  const reader = proc.stderr.getReader();
  let stderr = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return { outcome: await proc.exited, stderr };
    stderr += new TextDecoder().decode(value);
    if (stderr.includes('"keyturn listening"')) {
      proc.kill("SIGTERM");
      await proc.exited;
      return { outcome: "listening" as const, stderr };
    }
  }
}

describe("serve and the license key file", () => {
  test("a license key file that is not a key (a directory by that name) stops serve with exit 2, naming it", async () => {
    const { dir, keys } = site();
    mkdirSync(join(keys, `${KID}.pem`));
    const r = await serve(dir);
    expect(r.outcome).toBe(2);
    expect(r.stderr).toContain(`keyturn: --keys: ${join(keys, `${KID}.pem`)} cannot be read as a private key: it is a directory`);
    expect(r.stderr).toContain("every activation would answer 503 licensing_unavailable");
  });

  test("a license key file that is not valid PEM stops serve with exit 2", async () => {
    const { dir, keys } = site();
    writeFileSync(join(keys, `${KID}.pem`), "not a key\n", { mode: 0o600 });
    const r = await serve(dir);
    expect(r.outcome).toBe(2);
    expect(r.stderr).toContain(`${join(keys, `${KID}.pem`)} cannot be read as a private key`);
  });

  const root = process.getuid?.() === 0 && Bun.which("setpriv") !== null;
  const asNobody = ["setpriv", `--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups"];

  test.skipIf(!root)("the root-owned 0600 file `keys generate` writes, read by an unprivileged service user: exit 2, permission denied named", async () => {
    const { dir, keys } = site();
    generateKeyFiles(keys, KID);
    chmodSync(keys, 0o755);
    const r = await serve(dir, asNobody);
    // With its stderr, so that a failure says why the process ended.
    expect({ outcome: r.outcome, stderr: r.stderr }).toMatchObject({ outcome: 2 });
    expect(r.stderr).toContain(`${join(keys, `${KID}.pem`)} cannot be read as a private key: permission denied to uid ${NOBODY}`);
  });

  test.skipIf(!root)("0640 owned by root with the service's group: the service user starts, with licensing on and no warning about the mode", async () => {
    const { dir, keys } = site();
    generateKeyFiles(keys, KID);
    chmodSync(keys, 0o750);
    chownSync(keys, 0, NOBODY);
    chownSync(join(keys, `${KID}.pem`), 0, NOBODY);
    chmodSync(join(keys, `${KID}.pem`), 0o640);
    const r = await serve(dir, asNobody);
    expect({ outcome: r.outcome, stderr: r.stderr }).toMatchObject({ outcome: "listening" });
    expect(r.stderr).toContain(`"signingKid":"${KID}"`);
    expect(r.stderr).not.toContain("key file");
  });
});

describe("the key file mode rule", () => {
  test("0600 and 0640 pass; group-writable or open to every user is named with the rule", () => {
    expect(looseMode(0o100600)).toBeNull();
    expect(looseMode(0o100640)).toBeNull();
    expect(looseMode(0o100400)).toBeNull();
    expect(looseMode(0o100660)).toBe(
      "is writable by its group (mode 0660): make it 0600 owned by the service user, or 0640 owned by root with the service's group",
    );
    expect(looseMode(0o100644)).toStartWith("is open to every user (mode 0644)");
    expect(looseMode(0o100604)).toStartWith("is open to every user");
  });
});
