import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { VARIANTS } from "../src/config/variants";
import { generateKeyFiles } from "../src/domain/keys";
import { executable, untilListening } from "./executable";
import { tempDir } from "./helpers";

// The documented CI flow (docs/releasing-from-ci.md, docs/examples/release-from-ci.yml) against a
// live site: the compiled executable serves, and the same executable makes, signs and pushes.

const dir = tempDir("keyturn-push-");
const KID = "alpha-release-2026-11";
const ci = join(dir, "ci-secrets");
const site = { data: join(dir, "data"), keys: join(dir, "keys"), releases: join(dir, "releases") };
let exe: string;
let serve: ReturnType<typeof Bun.spawn>;
let url: string;
let writeToken: string;
let readToken: string;

async function run(args: string[], env: Record<string, string> = {}, cwd = dir) {
  const p = Bun.spawn([exe, ...args], { cwd, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, ...env }, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code };
}

async function token(scopes: string): Promise<string> {
  const r = await run(["admin-token", "create", "--variant", "alpha", "--data", site.data, "--name", `ci ${scopes}`, "--scopes", scopes, "--json"]);
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout).secret;
}

beforeAll(async () => {
  exe = await executable();
  mkdirSync(site.data, { recursive: true });
  mkdirSync(site.releases, { recursive: true });
  generateKeyFiles(site.keys, VARIANTS.alpha.defaultLicenseKid);
  // The release key is made on the vendor's machine; the site holds only its public half.
  generateKeyFiles(ci, KID);
  copyFileSync(join(ci, `${KID}.pub.pem`), join(site.keys, `${KID}.pub.pem`));
  // A release already in the tree when the site first starts (the baseline of release.published).
  writeFileSync(join(dir, "alpha-1.0.0-win-x64.exe"), crypto.getRandomValues(new Uint8Array(4096)));
  const first = await run([
    "release",
    "make",
    "--variant",
    "alpha",
    "--product",
    "alpha",
    "--installer",
    join(dir, "alpha-1.0.0-win-x64.exe"),
    "--version",
    "1.0.0",
    "--releases",
    site.releases,
    "--key",
    join(ci, `${KID}.pem`),
  ]);
  expect(first.code).toBe(0);
  writeToken = await token("releases:write");
  readToken = await token("releases:read");

  serve = Bun.spawn(
    [
      exe,
      "serve",
      "--variant",
      "alpha",
      "--base-url",
      "https://licenses.example.com",
      "--data",
      site.data,
      "--keys",
      site.keys,
      "--releases",
      site.releases,
      "--port",
      "0",
      "--rate-limit-admin",
      "100000/60s",
    ],
    { stdout: "ignore", stderr: "pipe" },
  );
  const reader = (serve.stderr as ReadableStream<Uint8Array>).getReader();
  ({ url } = await untilListening(reader));
  // Keep reading, so the server never blocks on a full pipe.
  void (async () => {
    for (;;) if ((await reader.read()).done) break;
  })();
}, 120_000);

afterAll(async () => {
  serve?.kill("SIGTERM");
  await serve?.exited;
  rmSync(dir, { recursive: true, force: true });
});

/** The site's release overview (admin API, releases:read). */
async function overview(): Promise<{ lanes: { lane: string; releases: { version: string; share: number; halted: string | null }[] }[] }> {
  const res = await fetch(`${url}/api/v1/admin/releases`, { headers: { authorization: `Bearer ${readToken}` } });
  return res.json() as never;
}

const staged = () => (existsSync(join(site.data, "uploads")) ? readdirSync(join(site.data, "uploads")) : []);
const laneDir = join(site.releases, "alpha/stable/win-x64");

/**
 * A TCP proxy in front of the site that counts the bytes the client sends, and (cutAfter) cuts
 * both connections once that many have gone through: the server gets the bytes before the cut.
 */
function proxy(
  target: URL,
  cutAfter: number | null = null,
  throttleMs = 0,
): Promise<{ url: string; sent: () => number; cut: () => boolean; close: () => void }> {
  let sent = 0;
  let wasCut = false;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    upstream.pipe(client);
    client.on("data", (chunk: Buffer) => {
      if (wasCut) return;
      const room = cutAfter === null ? chunk.length : cutAfter - sent;
      if (chunk.length >= room && cutAfter !== null) {
        wasCut = true;
        sent += room;
        upstream.end(chunk.subarray(0, room));
        client.destroy();
        return;
      }
      sent += chunk.length;
      if (throttleMs > 0) {
        // A slow link: a pause after each chunk read.
        client.pause();
        upstream.write(chunk);
        setTimeout(() => client.resume(), throttleMs);
      } else if (!upstream.write(chunk)) {
        client.pause();
        upstream.once("drain", () => client.resume());
      }
    });
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
    client.on("close", () => upstream.end());
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      resolve({
        url: `http://127.0.0.1:${port}`,
        sent: () => sent,
        cut: () => wasCut,
        close: () => {
          for (const s of sockets) s.destroy();
          server.close();
        },
      });
    }),
  );
}

/** A release folder made and signed as the workflow does, in a CI workspace. */
async function madeAndSigned(version: string, bytes: number): Promise<string> {
  const workspace = join(dir, `workspace-${version}`);
  mkdirSync(workspace, { recursive: true });
  const installer = join(workspace, `alpha-${version}-win-x64.exe`);
  writeFileSync(
    installer,
    crypto.getRandomValues(new Uint8Array(bytes)).map((b, i) => b ^ (i & 0xff)),
  );
  const args = ["release", "make", "--variant", "alpha", "--product", "alpha", "--installer", installer, "--version", version, "--rollout", "7d"];
  expect((await run([...args, "--releases", join(workspace, "release")])).code).toBe(0);
  const folder = join(workspace, "release/alpha/stable/win-x64", version);
  expect((await run(["release", "sign", "--key", join(ci, `${KID}.pem`), join(folder, "alpha-update.json")])).code).toBe(0);
  return folder;
}

describe("releasing from CI to a live site", () => {
  test("the workflow in docs/examples runs as written: build, make, sign with the key from a secret, push halted with the token from a secret", async () => {
    const workflow = Bun.YAML.parse(readFileSync(join(import.meta.dir, "../docs/examples/release-from-ci.yml"), "utf8")) as {
      jobs: { release: { env: Record<string, string>; steps: { id?: string; run?: string; env?: Record<string, string> }[] } };
    };
    const job = workflow.jobs.release;
    const secrets: Record<string, string> = { KEYTURN_RELEASE_KEY: readFileSync(join(ci, `${KID}.pem`), "utf8"), KEYTURN_ADMIN_TOKEN: writeToken };
    const vars: Record<string, string> = { KEYTURN_RELEASE_KID: KID, KEYTURN_SITE: url };
    const expression = (value: string) =>
      value.replace(/\$\{\{\s*(secrets|vars)\.([A-Z_]+)\s*\}\}/g, (_, kind: string, name: string) => {
        const found = (kind === "secrets" ? secrets : vars)[name];
        if (found === undefined) throw new Error(`the test does not provide ${kind}.${name}`);
        return found;
      });
    const workspace = join(dir, "workflow");
    const runnerTemp = join(dir, "runner-temp");
    const bin = join(dir, "bin");
    mkdirSync(workspace, { recursive: true });
    mkdirSync(runnerTemp, { recursive: true });
    mkdirSync(bin, { recursive: true });
    // What the checkout and install steps give the job: the repository and keyturn on PATH.
    symlinkSync(exe, join(bin, "keyturn"));
    const githubEnv = join(runnerTemp, "github-env");
    writeFileSync(githubEnv, "");
    const ran: string[] = [];
    for (const step of job.steps) {
      if (!step.run || step.id === "install") continue;
      const exported = Object.fromEntries(
        readFileSync(githubEnv, "utf8")
          .split("\n")
          .filter((l) => l.includes("="))
          .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
      );
      const env = {
        PATH: `${bin}:${process.env.PATH ?? "/usr/bin:/bin"}`,
        HOME: dir,
        GITHUB_REF_NAME: "v2.0.0",
        GITHUB_ENV: githubEnv,
        RUNNER_TEMP: runnerTemp,
        ...job.env,
        ...exported,
        ...Object.fromEntries(Object.entries(step.env ?? {}).map(([k, v]) => [k, expression(String(v))])),
      };
      // GitHub's shell for `run` on Linux runners: bash --noprofile --norc -eo pipefail.
      const p = Bun.spawn(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step.run], { cwd: workspace, env, stdout: "pipe", stderr: "pipe" });
      const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
      expect({ step: step.id, code, stderr }).toEqual({ step: step.id, code: 0, stderr: "" });
      ran.push(step.id!);
      if (step.id === "push") {
        expect(stdout).toContain("published alpha/stable/win-x64 2.0.0 (folder 2.0.0)");
        expect(stdout).toContain("halted at 0 %: start its ramp with keyturn release resume --lane alpha/stable/win-x64 --version 2.0.0");
      }
    }
    expect(ran).toEqual(["build", "make", "sign", "push"]);
    // The private key left the runner's disk; the site holds the folder as the build made it.
    expect(existsSync(join(runnerTemp, "release-key"))).toBe(false);
    const made = join(workspace, "release/alpha/stable/win-x64/2.0.0");
    for (const name of readdirSync(made)) expect(readFileSync(join(laneDir, "2.0.0", name)).equals(readFileSync(join(made, name)))).toBe(true);
    expect(staged()).toEqual([]);
    let release: { version: string; share: number; halted: string | null } | undefined;
    for (let i = 0; i < 200 && !release; i++) {
      release = (await overview()).lanes.find((l) => l.lane === "alpha/stable/win-x64")?.releases.find((r) => r.version === "2.0.0");
      if (!release) await Bun.sleep(25);
    }
    expect(release).toMatchObject({ version: "2.0.0", share: 0 });
    expect(release!.halted).not.toBeNull();
  }, 120_000);

  test("a push cut mid-file resumes where the site stopped: the second push sends only the rest (measured on the wire)", async () => {
    const size = 6 * 1024 * 1024;
    const folder = await madeAndSigned("2.1.0", size);
    const total = readdirSync(folder).reduce((n, f) => n + Bun.file(join(folder, f)).size, 0);
    const chunk = String(1024 * 1024);

    // The connection is cut once 3.5 MiB have gone towards the site (the installer is sent first: its name sorts first).
    const cutting = await proxy(new URL(url), 3.5 * 1024 * 1024);
    const first = await run(["release", "push", "--site", cutting.url, "--chunk-size", chunk, "--retries", "0", folder], { KEYTURN_ADMIN_TOKEN: writeToken });
    cutting.close();
    expect(cutting.cut()).toBe(true);
    expect(first.code).toBe(1);
    expect(first.stderr).toContain("push again to send the rest");
    expect(existsSync(join(laneDir, "2.1.0"))).toBe(false);

    const counting = await proxy(new URL(url));
    const second = await run(["release", "push", "--site", counting.url, "--chunk-size", chunk, folder], { KEYTURN_ADMIN_TOKEN: writeToken });
    counting.close();
    expect(second.stderr).toBe("");
    expect(second.code).toBe(0);
    const held = Number(/the site holds (\d+) of (\d+) bytes/.exec(second.stdout)?.[1]);
    expect(second.stdout).toContain(`of ${total} bytes`);
    // At least the three whole chunks before the cut were kept; what the second push sent is the rest.
    expect(held).toBeGreaterThanOrEqual(3 * 1024 * 1024);
    expect(second.stdout).toContain(`sent ${total - held} bytes; the release is ${total} bytes`);
    // On the wire: the rest, plus requests' headers and JSON (a few KiB), never the whole release again.
    expect(counting.sent()).toBeGreaterThanOrEqual(total - held);
    expect(counting.sent()).toBeLessThan(total - held + 64 * 1024);
    expect(counting.sent()).toBeLessThan(total - 3 * 1024 * 1024);
    expect(readFileSync(join(laneDir, "2.1.0", "alpha-2.1.0-win-x64.exe")).equals(readFileSync(join(folder, "alpha-2.1.0-win-x64.exe")))).toBe(true);
    expect(staged()).toEqual([]);
  }, 120_000);

  test("a push killed mid-file (the runner stopped) resumes too: only the rest is sent", async () => {
    const folder = await madeAndSigned("2.5.0", 4 * 1024 * 1024);
    const total = readdirSync(folder).reduce((n, f) => n + Bun.file(join(folder, f)).size, 0);
    const slow = await proxy(new URL(url), null, 5);
    const push = Bun.spawn([exe, "release", "push", "--site", slow.url, "--chunk-size", String(256 * 1024), "--retries", "0", folder], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, KEYTURN_ADMIN_TOKEN: writeToken },
      stdout: "ignore",
      stderr: "ignore",
    });
    // Killed once the site holds more than 1 MiB of the installer.
    const part = () => {
      for (const id of staged()) {
        const path = join(site.data, "uploads", id, "files", "alpha-2.5.0-win-x64.exe");
        if (existsSync(path)) return Bun.file(path).size;
      }
      return 0;
    };
    for (let i = 0; i < 2000 && part() <= 1024 * 1024 && push.exitCode === null; i++) await Bun.sleep(5);
    push.kill("SIGKILL");
    await push.exited;
    slow.close();
    expect(push.signalCode).toBe("SIGKILL");
    expect(existsSync(join(laneDir, "2.5.0"))).toBe(false);

    const counting = await proxy(new URL(url));
    const again = await run(["release", "push", "--site", counting.url, folder], { KEYTURN_ADMIN_TOKEN: writeToken });
    counting.close();
    expect(again.code).toBe(0);
    const held = Number(/the site holds (\d+) of/.exec(again.stdout)?.[1]);
    expect(held).toBeGreaterThan(1024 * 1024);
    expect(again.stdout).toContain(`sent ${total - held} bytes`);
    expect(counting.sent()).toBeLessThan(total - held + 64 * 1024);
    expect(readFileSync(join(laneDir, "2.5.0", "alpha-2.5.0-win-x64.exe")).equals(readFileSync(join(folder, "alpha-2.5.0-win-x64.exe")))).toBe(true);
  }, 120_000);

  test("a tampered folder is refused with the check's message and nothing is written", async () => {
    // A manifest changed after signing (its hashes still agree with the installer): only the site, holding the public key, can tell.
    const folder = await madeAndSigned("2.2.0", 50_000);
    const manifestPath = join(folder, "alpha-update.json");
    writeFileSync(manifestPath, readFileSync(manifestPath, "utf8").replace('"rollout": {\n    "days": 7\n  }', '"rollout": {\n    "days": 1\n  }'));
    const refused = await run(["release", "push", "--site", url, folder], { KEYTURN_ADMIN_TOKEN: writeToken });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`release_invalid: Not published: signature does not verify with ${KID}`);
    expect(existsSync(join(laneDir, "2.2.0"))).toBe(false);
    expect(readdirSync(laneDir).filter((n) => n.startsWith("."))).toEqual([]);
    expect(staged()).toEqual([]);

    // An installer changed after signing is caught before a byte is sent.
    const other = await madeAndSigned("2.3.0", 50_000);
    const installer = join(other, "alpha-2.3.0-win-x64.exe");
    const bytes = readFileSync(installer);
    bytes[10] = bytes[10]! ^ 1;
    writeFileSync(installer, bytes);
    const counting = await proxy(new URL(url));
    const local = await run(["release", "push", "--site", counting.url, other], { KEYTURN_ADMIN_TOKEN: writeToken });
    counting.close();
    expect(local.code).toBe(1);
    expect(local.stderr).toContain("installer alpha-2.3.0-win-x64.exe does not match the manifest's sha256");
    expect(counting.sent()).toBe(0);
    expect(existsSync(join(laneDir, "2.3.0"))).toBe(false);

    // A token without releases:write is refused before anything is kept.
    const folder4 = await madeAndSigned("2.4.0", 1000);
    const scoped = await run(["release", "push", "--site", url, folder4], { KEYTURN_ADMIN_TOKEN: readToken });
    expect(scoped.code).toBe(1);
    expect(scoped.stderr).toContain("insufficient_scope");
    expect(staged()).toEqual([]);
  }, 120_000);
});
