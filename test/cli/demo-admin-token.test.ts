import { afterAll, expect, test } from "bun:test";
import { readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../helpers";

/** `serve --demo` prints a demo admin token beside the demo license, kept across restarts, replaced once revoked. */
const root = join(import.meta.dir, "..", "..");
const main = join(root, "src", "main.ts");
const data = tempDir("keyturn-demo-admin-");
afterAll(() => rmSync(data, { recursive: true, force: true }));

/** Starts the demo, reads its banner up to the admin curl, and stops it after `use`. */
async function withDemo(use: (banner: { token: string; url: string; text: string }) => Promise<void>): Promise<void> {
  const proc = Bun.spawn([process.execPath, main, "serve", "--demo", "--port", "0", "--data", data, "--log-format", "json"], {
    cwd: root,
    stdout: "pipe",
    stderr: "pipe",
  });
  try {
    let out = "";
    const reader = proc.stdout.getReader();
    while (!/admin\/licenses -H 'Authorization: Bearer kta_\S+'\n/.test(out)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`demo exited early: ${out}`);
      out += new TextDecoder().decode(value);
    }
    const token = /^demo admin token: (kta_[A-Za-z0-9_-]+)$/m.exec(out)?.[1];
    const url = /curl -s (http:\/\/127\.0\.0\.1:\d+)\/api\/v1\/admin\/licenses -H 'Authorization: Bearer (kta_\S+)'/.exec(out);
    expect(token).toBeDefined();
    expect(url?.[2]).toBe(token!);
    await use({ token: token!, url: url![1]!, text: out });
    // SIGTERM is handled (a clean stop, exit 0) from the "keyturn listening" line on.
    let log = "";
    const logReader = proc.stderr.getReader();
    while (!log.includes('"keyturn listening"')) {
      const { value, done } = await logReader.read();
      if (done) break;
      log += new TextDecoder().decode(value);
    }
    proc.kill("SIGTERM");
    expect(await proc.exited).toBe(0);
  } finally {
    proc.kill("SIGKILL");
  }
}

const cli = (...args: string[]) => Bun.spawnSync([process.execPath, main, ...args, "--variant", "alpha", "--data", join(data, "demo-alpha")], { cwd: root });

test("the demo admin token works on the admin API, survives a restart, and is replaced once revoked", async () => {
  let first = "";
  await withDemo(async ({ token, url }) => {
    first = token;
    const r = await fetch(`${url}/api/v1/admin/licenses`, { headers: { authorization: `Bearer ${token}` } });
    expect(r.status).toBe(200);
    const body = (await r.json()) as { licenses: { licensee: string; seats: number }[] };
    expect(body.licenses).toMatchObject([{ licensee: "Demo User", seats: 3 }]);
  });
  const file = join(data, "demo-alpha", "demo-admin-token.txt");
  expect(readFileSync(file, "utf8").trim()).toBe(first);
  expect(statSync(file).mode & 0o777).toBe(0o600);

  await withDemo(async ({ token }) => expect(token).toBe(first));

  const listed = cli("admin-token", "list", "--json");
  expect(listed.exitCode).toBe(0);
  const { tokens } = JSON.parse(listed.stdout.toString()) as { tokens: { id: string; name: string; scopes: string[] }[] };
  expect(tokens.map((t) => [t.name, t.scopes])).toEqual([["demo", ["admin"]]]);
  expect(cli("admin-token", "revoke", tokens[0]!.id).exitCode).toBe(0);

  await withDemo(async ({ token, url }) => {
    expect(token).not.toBe(first);
    const old = await fetch(`${url}/api/v1/admin/licenses`, { headers: { authorization: `Bearer ${first}` } });
    expect(old.status).toBe(401);
    expect((await fetch(`${url}/api/v1/admin/licenses`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
  });
}, 30_000);

test("the banner prints the console's and the portal's addresses and how to sign in; both sign-ins work there", async () => {
  await withDemo(async ({ token, url, text }) => {
    const consoleAt = /^Console \(staff\): +(\S+) +sign in with the demo admin token$/m.exec(text)?.[1];
    const portalAt = /^Portal \(customers\): +(\S+) +sign in with the demo license key$/m.exec(text)?.[1];
    const key = /^demo license: (\S+)$/m.exec(text)?.[1];
    expect(consoleAt).toBe(`${url}/console/`);
    expect(portalAt).toBe(`${url}/portal/`);
    // A browser on those pages sends their origin with the forms: the demo's public origin.
    const form = (path: string, body: Record<string, string>) =>
      fetch(`${url}${path}`, {
        method: "POST",
        redirect: "manual",
        headers: { origin: url, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(body),
      });
    const staff = await form("/console/sign-in", { token });
    expect(staff.status).toBe(303);
    expect(staff.headers.get("set-cookie")).toStartWith("keyturn-console=");
    const customer = await form("/portal/sign-in", { key: key! });
    expect(customer.status).toBe(303);
    expect(customer.headers.get("set-cookie")).toStartWith("keyturn-portal=");
  });
});
