import { afterAll, beforeAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { AuditQuery } from "../src/domain/admin/audit-query";
import { CLI_CALLER } from "../src/domain/admin/deps";
import { createAdminToken } from "../src/domain/admin/tokens";
import { decode } from "../src/domain/decode";
import { BASE_URL, tempDir, testSite, type TestSite } from "./helpers";

// One model per input, decoded once wherever the input came from: the same bad field of a new
// licence is refused in the same words by the admin API, the console's form and the command line.
const ORIGIN = new URL(BASE_URL).origin;
const MAIN = join(import.meta.dir, "..", "src", "main.ts");
const cwd = tempDir("keyturn-admin-messages-");
let site: TestSite;
let token: string;
let console_: { cookie: string; csrf: string };

beforeAll(async () => {
  site = await testSite("alpha");
  token = (await createAdminToken(site.composed.services.admin, CLI_CALLER, { name: "messages", scopes: ["admin"] })).secret;
  const signIn = await site.app.handle(
    new Request(`${ORIGIN}/console/sign-in`, {
      method: "POST",
      body: new URLSearchParams({ token }).toString(),
      headers: { "content-type": "application/x-www-form-urlencoded", origin: ORIGIN },
    }),
  );
  expect(signIn.status).toBe(303);
  const cookie = signIn.headers.get("set-cookie")!.split(";")[0]!;
  const page = await (await site.app.handle(new Request(`${ORIGIN}/console/licenses`, { headers: { cookie } }))).text();
  console_ = { cookie, csrf: /name="csrf" value="([0-9a-f]{64})"/.exec(page)?.[1] ?? "" };
  expect(console_.csrf).not.toBe("");
});
afterAll(() => {
  site.close();
  rmSync(cwd, { recursive: true, force: true });
});

const LONG_NAME = "L".repeat(201);

async function fromApi(fields: Record<string, unknown>): Promise<string> {
  const res = await site.request("POST", "/admin/licenses", { token, body: { licensee: "Ada", plan: "pro", seats: 1, channels: ["stable"], ...fields } });
  const answer = (await res.json()) as { error: string; message: string };
  expect({ status: res.status, error: answer.error }).toEqual({ status: 400, error: "invalid_request" });
  return answer.message;
}

async function fromConsole(fields: Record<string, string>): Promise<string> {
  const form = new URLSearchParams({
    csrf: console_.csrf,
    licensee: "Ada",
    organization: "Engines",
    plan: "pro",
    planTitle: "Pro",
    seats: "1",
    channels: "stable",
    ...fields,
  });
  const res = await site.app.handle(
    new Request(`${ORIGIN}/console/licenses`, {
      method: "POST",
      body: form.toString(),
      headers: { "content-type": "application/x-www-form-urlencoded", origin: ORIGIN, cookie: console_.cookie },
    }),
  );
  expect(res.status).toBe(400);
  return /<p class="notice error" role="alert">([^<]*)<\/p>/.exec(await res.text())?.[1] ?? "";
}

function fromCli(...flags: string[]): string {
  const run = Bun.spawnSync(
    [process.execPath, MAIN, "license", "create", "--licensee", "Ada", "--plan", "pro", "--seats", "1", "--channels", "stable", ...flags],
    {
      cwd,
      env: { PATH: process.env.PATH ?? "", KEYTURN_VARIANT: "alpha" },
    },
  );
  expect(run.exitCode).toBe(1);
  return run.stderr.toString();
}

test("a licensee too long: the same message from the admin API, the console and the CLI", async () => {
  const message = "licensee is longer than 200 characters.";
  expect(await fromApi({ licensee: LONG_NAME })).toBe(message);
  expect(await fromConsole({ licensee: LONG_NAME })).toBe(message);
  expect(fromCli("--licensee", LONG_NAME)).toContain(message);
});

test("an expiry in the past (a rule no schema states; the console sends a day): the same message everywhere", async () => {
  const message = "expires must be in the future.";
  expect(await fromApi({ expires: "2020-01-01T00:00:00Z" })).toBe(message);
  expect(await fromConsole({ expires: "2020-01-01" })).toBe(message);
  expect(fromCli("--expires", "2020-01-01")).toContain(message);
});

test("the console still takes its date field's day as an expiry", async () => {
  const form = new URLSearchParams({
    csrf: console_.csrf,
    licensee: "Ada",
    organization: "Engines",
    plan: "pro",
    planTitle: "Pro",
    seats: "1",
    channels: "stable",
    expires: "2099-06-30",
  });
  const res = await site.app.handle(
    new Request(`${ORIGIN}/console/licenses`, {
      method: "POST",
      body: form.toString(),
      headers: { "content-type": "application/x-www-form-urlencoded", origin: ORIGIN, cookie: console_.cookie },
    }),
  );
  expect(res.status).toBe(201);
  const licenses = await site.composed.store.listLicenses();
  expect(licenses.map((l) => l.expires)).toContain(Date.parse("2099-06-30T00:00:00Z"));
});

test("a query parameter is refused by the API in the words decode gives the console and the CLI", async () => {
  for (const [query, input] of [
    ["limit=x", { limit: "x" }],
    ["since=yesterday", { since: "yesterday" }],
  ] as const) {
    const res = await site.request("GET", `/admin/audit?${query}`, { token });
    const answer = (await res.json()) as { error: string; message: string };
    expect({ status: res.status, error: answer.error }).toEqual({ status: 400, error: "invalid_request" });
    let decoded = "";
    try {
      decode(AuditQuery, input);
    } catch (e) {
      decoded = (e as Error).message;
    }
    expect(decoded).not.toBe("");
    expect(answer.message).toBe(decoded);
  }
});
