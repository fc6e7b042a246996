import { afterAll, describe, expect, test } from "bun:test";
import { cpSync, existsSync, readFileSync, rmSync, truncateSync, writeFileSync, copyFileSync, mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { compactVerify, importSPKI } from "jose";
import { device, tempDir } from "../helpers";
import { ReleaseTree } from "../release-tree";

const ROOT = resolve(import.meta.dir, "../..");
const MAIN = join(ROOT, "src/main.ts");
const cleanup: (() => void)[] = [];
afterAll(() => cleanup.forEach((f) => f()));

async function run(args: string[], cwd = ROOT) {
  const proc = Bun.spawn([process.execPath, MAIN, ...args], { cwd, stdout: "pipe", stderr: "pipe", env: { ...process.env, KEYTURN_VARIANT: undefined } });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { stdout, stderr, code };
}

describe("keyturn release check", () => {
  test.each(["alpha", "beta", "gamma"])("passes on releases.example/%s (variant told by the tree), every folder live", async (variant) => {
    const { stdout, code } = await run(["release", "check", "--releases", `releases.example/${variant}`, "--keys", "releases.example/keys"]);
    expect(code).toBe(0);
    expect(stdout).not.toContain("note: no");
    expect(stdout).toContain(`${variant} tree releases.example/${variant}: ${variant === "gamma" ? 3 : 6} live, 0 with problems`);
    expect(stdout).not.toContain("PROBLEM");
  });

  test("names each broken folder with its reason and exits non-zero", async () => {
    const dir = tempDir();
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    cpSync(join(ROOT, "releases.example/gamma"), join(dir, "tree"), { recursive: true });
    const t = join(dir, "tree/stable/win-x64");
    const copy = (from: string, to: string) => cpSync(join(t, from), join(t, to), { recursive: true });
    for (const name of ["json", "path", "missing", "size", "sha", "sig"]) copy("2.1.0", name);
    writeFileSync(join(t, "json/gamma-update.json"), "{");
    cpSync(join(ROOT, "releases.example/gamma/preview/win-x64/2.2.0-beta.1"), join(t, "path"), { recursive: true });
    rmSync(join(t, "missing/gamma-2.1.0-win-x64.exe"));
    truncateSync(join(t, "size/gamma-2.1.0-win-x64.exe"), 100);
    const installer = readFileSync(join(t, "sha/gamma-2.1.0-win-x64.exe"));
    installer[0] = installer[0]! ^ 1;
    writeFileSync(join(t, "sha/gamma-2.1.0-win-x64.exe"), installer);
    writeFileSync(join(t, "sig/gamma-update.json"), readFileSync(join(t, "sig/gamma-update.json"), "utf8").replace("Security fix", "Security fiX"));

    const { stdout, code } = await run(["release", "check", "--releases", join(dir, "tree"), "--keys", "releases.example/keys", "--variant", "gamma"]);
    expect(code).toBe(1);
    expect(stdout).toContain("PROBLEM  stable/win-x64/json: gamma-update.json is not valid JSON");
    expect(stdout).toContain("PROBLEM  stable/win-x64/path: manifest says channel preview, but the folder is under stable");
    expect(stdout).toContain("PROBLEM  stable/win-x64/missing: installer gamma-2.1.0-win-x64.exe is missing");
    expect(stdout).toContain("PROBLEM  stable/win-x64/size: installer gamma-2.1.0-win-x64.exe is 100 bytes, the manifest says");
    expect(stdout).toContain("PROBLEM  stable/win-x64/sha: installer gamma-2.1.0-win-x64.exe does not match the manifest's sha256");
    expect(stdout).toContain("PROBLEM  stable/win-x64/sig: signature does not verify with gamma-release-2026-11");
    expect(stdout).toContain("live     stable/win-x64/2.1.0  (2.1.0)");
    expect(stdout).toContain("3 live, 6 with problems");
  });

  test("an unreadable tree, or one whose variant cannot be told, fails", async () => {
    const missing = await run(["release", "check", "--releases", "/nonexistent/tree", "--variant", "alpha"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("cannot read the release tree /nonexistent/tree");
    const unknown = await run(["release", "check", "--releases", "/nonexistent/tree"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("give --variant");
  });
});

describe("keyturn release sign", () => {
  test("writes MANIFEST.sig, a detached JWS with the kid of the key file, that jose verifies", async () => {
    const tree = new ReleaseTree("beta");
    cleanup.push(() => tree.remove());
    const r = tree.add({ version: "3.0.0", sign: false });
    const { stdout, code } = await run(["release", "sign", "--key", tree.privateKeyFile, r.manifestPath]);
    expect(code).toBe(0);
    expect(stdout).toContain("with beta-release-2026-11");
    const [header, empty, signature] = readFileSync(`${r.manifestPath}.sig`, "utf8").split(".");
    expect(empty).toBe("");
    const key = await importSPKI(readFileSync(join(tree.keysDir, `${tree.kid}.pub.pem`), "utf8"), "ES256");
    const { protectedHeader } = await compactVerify(`${header}.${r.manifestBytes.toString("base64url")}.${signature}`, key, { algorithms: ["ES256"] });
    expect(protectedHeader).toEqual({ alg: "ES256", kid: "beta-release-2026-11", typ: "be-rel+jws" });
  });

  test("refuses a manifest that is not valid by the tree's rules, and writes nothing", async () => {
    const tree = new ReleaseTree("alpha");
    cleanup.push(() => tree.remove());
    const wrongPlace = tree.add({ version: "1.0.0", sign: false, fields: { channel: "preview" } });
    const wrongHash = tree.add({ version: "1.1.0", sign: false, fields: { sha256: "0".repeat(64) } });
    const a = await run(["release", "sign", "--key", tree.privateKeyFile, wrongPlace.manifestPath]);
    expect(a.code).toBe(1);
    expect(a.stderr).toContain("manifest says channel preview, but the folder is under stable");
    const b = await run(["release", "sign", "--key", tree.privateKeyFile, wrongHash.manifestPath]);
    expect(b.code).toBe(1);
    expect(b.stderr).toContain("does not match the manifest's sha256");
    expect(existsSync(`${wrongPlace.manifestPath}.sig`) || existsSync(`${wrongHash.manifestPath}.sig`)).toBe(false);
  });

  test("needs a release key named by its kid", async () => {
    const tree = new ReleaseTree("alpha");
    cleanup.push(() => tree.remove());
    const r = tree.add({ version: "1.0.0", sign: false });
    const renamed = join(tree.dir, "my-key.pem");
    copyFileSync(tree.privateKeyFile, renamed);
    const res = await run(["release", "sign", "--key", renamed, r.manifestPath]);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain("--key must be a release private key named <variant>-release-YYYY-MM.pem");
  });
});

/** A `keyturn serve` process; resolves once it logs that it listens. */
async function serve(args: string[]) {
  const proc = Bun.spawn([process.execPath, MAIN, "serve", "--port", "0", "--log-format", "json", ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  cleanup.push(() => proc.kill());
  const logs: Record<string, unknown>[] = [];
  let stdout = "";
  void (async () => {
    for await (const chunk of proc.stdout) stdout += new TextDecoder().decode(chunk);
  })();
  let listening: (url: string) => void = () => {};
  const url = new Promise<string>((r) => (listening = r));
  void (async () => {
    let buffered = "";
    for await (const chunk of proc.stderr) {
      buffered += new TextDecoder().decode(chunk);
      let nl;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        const line = JSON.parse(buffered.slice(0, nl));
        buffered = buffered.slice(nl + 1);
        logs.push(line);
        if (line.msg === "keyturn listening") listening(line.url);
      }
    }
  })();
  return { proc, logs, url: await url, stdout: () => stdout };
}

async function eventually<T>(f: () => Promise<T | undefined> | T | undefined, ms = 8000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error("not in time");
    await Bun.sleep(50);
  }
}

describe("keyturn serve --demo serves releases.example end to end", () => {
  test("activate, manifest and signature, a download resumed with Range, the releases list", async () => {
    const data = tempDir();
    cleanup.push(() => rmSync(data, { recursive: true, force: true }));
    const s = await serve(["--demo", "--variant", "gamma", "--data", data]);
    const key = await eventually(() =>
      existsSync(join(data, "demo-gamma/demo-license.txt")) ? readFileSync(join(data, "demo-gamma/demo-license.txt"), "utf8").trim() : undefined,
    );
    const api = `${s.url}/api/v1`;
    const act = await fetch(`${api}/licenses/activate`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ key, device: device("gamma") }),
    });
    expect(act.status).toBe(200);
    const auth = { authorization: `Bearer ${((await act.json()) as { token: string }).token}` };

    const manifest = await fetch(`${api}/updates/stable/win-x64/gamma-update.json`, { headers: auth });
    expect(manifest.status).toBe(200);
    const manifestBytes = Buffer.from(await manifest.arrayBuffer());
    expect(manifestBytes.equals(readFileSync(join(ROOT, "releases.example/gamma/stable/win-x64/2.1.0/gamma-update.json")))).toBe(true);
    const sig = await (await fetch(`${api}/updates/stable/win-x64/gamma-update.json.sig`, { headers: auth })).text();
    const pub = await importSPKI(readFileSync(join(ROOT, "releases.example/keys/gamma-release-2026-11.pub.pem"), "utf8"), "ES256");
    const [h, , sgn] = sig.split(".");
    await compactVerify(`${h}.${manifestBytes.toString("base64url")}.${sgn}`, pub, { algorithms: ["ES256"] });
    // The demo checked the example's signatures: the release key went into its keys directory.
    expect(s.logs.find((l) => l.msg === "release index built")).toMatchObject({ live: 3, skipped: 0, signaturesVerified: 3 });

    const { installer, size } = JSON.parse(manifestBytes.toString()) as { installer: string; size: number };
    const first = await fetch(`${api}/updates/stable/win-x64/${installer}`, { headers: { ...auth, range: "bytes=0-999" } });
    expect(first.status).toBe(206);
    const rest = await fetch(`${api}/updates/stable/win-x64/${installer}`, {
      headers: { ...auth, range: "bytes=1000-", "if-range": first.headers.get("etag")! },
    });
    expect(rest.status).toBe(206);
    const whole = Buffer.concat([Buffer.from(await first.arrayBuffer()), Buffer.from(await rest.arrayBuffer())]);
    expect(whole.length).toBe(size);
    expect(whole.equals(readFileSync(join(ROOT, "releases.example/gamma/stable/win-x64/2.1.0", installer)))).toBe(true);

    const list = (await (await fetch(`${api}/releases`, { headers: auth })).json()) as { releases: { version: string }[] };
    expect(list.releases.map((r) => r.version)).toEqual(["2.2.0-beta.1", "2.1.0", "2.0.0"]);
  });
});

describe("keyturn serve picks up tree changes while running", () => {
  test("a release added is served within seconds (watch); SIGHUP re-reads the tree", async () => {
    const tree = new ReleaseTree("alpha");
    cleanup.push(() => tree.remove());
    const dir = tempDir();
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const keys = join(dir, "keys");
    mkdirSync(keys);
    copyFileSync(join(tree.keysDir, `${tree.kid}.pub.pem`), join(keys, `${tree.kid}.pub.pem`));
    tree.add({ version: "1.0.0", released: "2026-09-01T00:00:00+00:00" });
    const s = await serve(["--demo", "--variant", "alpha", "--data", dir, "--keys", keys, "--releases", tree.root]);
    const key = await eventually(() =>
      existsSync(join(dir, "demo-alpha/demo-license.txt")) ? readFileSync(join(dir, "demo-alpha/demo-license.txt"), "utf8").trim() : undefined,
    );
    const act = await fetch(`${s.url}/api/v1/licenses/activate`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ key, device: device("alpha") }),
    });
    const auth = { authorization: `Bearer ${((await act.json()) as { token: string }).token}` };
    const version = async () => {
      const res = await fetch(`${s.url}/api/v1/updates/alpha/stable/win-x64/alpha-update.json`, { headers: auth });
      return res.status === 200 ? ((await res.json()) as { version: string }).version : String(res.status);
    };
    expect(await version()).toBe("1.0.0");

    tree.add({ version: "1.1.0", released: "2026-10-01T00:00:00+00:00" });
    await eventually(async () => ((await version()) === "1.1.0" ? true : undefined), 5000);

    const builds = () => s.logs.filter((l) => l.msg === "release index built").length;
    const before = builds();
    s.proc.kill("SIGHUP");
    await eventually(() => (builds() > before ? true : undefined), 5000);
    expect(s.logs.some((l) => l.msg === "SIGHUP: re-reading the release tree and the keys")).toBe(true);
    expect(s.proc.exitCode).toBeNull();
  });
});
