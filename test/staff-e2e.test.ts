import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { decodeJwt } from "jose";
import { executable } from "./executable";
import { generateKeyFiles } from "../src/domain/keys";
import { device, tempDir } from "./helpers";
import { CLIENT_ID, STAFF_GROUP, startIssuer, type LocalIssuer } from "./identity-issuer";

// The compiled executable, configured through KEYTURN_* environment, doing challenge + exchange
// against the local issuer over real sockets.

let dir: string;
let issuer: LocalIssuer;
let proc: ReturnType<typeof Bun.spawn>;
let base: string;
let stderr = "";

beforeAll(async () => {
  dir = tempDir("keyturn-staff-e2e-");
  const exe = await executable();
  generateKeyFiles(join(dir, "keys"), "gamma-license-2026-09");
  mkdirSync(join(dir, "releases"));
  issuer = await startIssuer(Date.now);
  proc = Bun.spawn(
    [
      exe,
      "serve",
      "--variant",
      "gamma",
      "--base-url",
      "https://licenses.example.com",
      "--data",
      join(dir, "data"),
      "--keys",
      join(dir, "keys"),
      "--releases",
      join(dir, "releases"),
      "--port",
      "0",
      "--log-format",
      "json",
    ],
    {
      env: {
        PATH: process.env.PATH,
        KEYTURN_IDENTITY_ISSUER: issuer.url,
        KEYTURN_IDENTITY_CLIENT_ID: CLIENT_ID,
        KEYTURN_IDENTITY_GROUPS: STAFF_GROUP,
        KEYTURN_IDENTITY_MAX_AGE: "10m",
        KEYTURN_STAFF_ORGANIZATION: "Keyturn Ltd",
      },
      stdout: "ignore",
      stderr: "pipe",
    },
  );
  const reader = (proc.stderr as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  while (!/"keyturn listening"/.test(stderr)) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`keyturn exited before listening:\n${stderr}`);
    stderr += decoder.decode(value);
  }
  base = `${JSON.parse(stderr.split("\n").find((l) => l.includes("keyturn listening"))!).url}/api/v1`;
  void (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      stderr += decoder.decode(value);
    }
  })();
}, 60_000);

afterAll(async () => {
  proc?.kill("SIGTERM");
  await proc?.exited;
  issuer?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const post = async (path: string, body: unknown) => {
  const res = await fetch(base + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
};

test("compiled executable: staff sign-in with challenge and exchange against the issuer", async () => {
  const info = (await (await fetch(`${base}/auth/identity`)).json()) as Record<string, unknown>;
  expect(info).toEqual({ ok: true, enabled: true, issuer: issuer.url, clientId: CLIENT_ID, scopes: ["openid", "profile", "email"], maxAge: 600 });

  const dev = device("gamma");
  const challenge = await post("/auth/identity/challenge", { device: dev });
  expect(challenge.status).toBe(200);
  const nonce = challenge.body.nonce as string;
  const idToken = await issuer.mint({ nonce });
  const ok = await post("/auth/identity/exchange", { id_token: idToken, device: dev });
  expect(ok.status).toBe(200);
  expect(ok.body.entitlement).toMatchObject({ kind: "staff", licensee: "Grace Hopper", organization: "Keyturn Ltd", plan: "staff" });
  expect(decodeJwt(ok.body.token)).toMatchObject({ kind: "staff", lic: "staff:00u-grace" });

  const replay = await post("/auth/identity/exchange", { id_token: idToken, device: dev });
  expect({ status: replay.status, error: replay.body.error }).toEqual({ status: 409, error: "token_replayed" });

  const second = await post("/auth/identity/challenge", { device: dev });
  const noMfa = await post("/auth/identity/exchange", { id_token: await issuer.mint({ nonce: second.body.nonce, amr: ["pwd"] }), device: dev });
  expect({ status: noMfa.status, error: noMfa.body.error }).toEqual({ status: 403, error: "mfa_required" });
  expect(noMfa.body.ref).toMatch(/^ref_/);

  const current = await fetch(`${base}/entitlements/current`, { headers: { authorization: `Bearer ${ok.body.token}` } });
  expect(((await current.json()) as any).entitlement.kind).toBe("staff");

  // Secrets never reach the log.
  for (const secret of [nonce, idToken, ok.body.token, second.body.nonce]) expect(stderr).not.toContain(secret);
});
