import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import { decodeJwt } from "jose";
import { device, testClock, testSite, type TestSite } from "./helpers";
import { startRealIssuer, type RealIssuer } from "./real-issuer";

// Staff sign-in against a real OpenID provider (the oidc-provider package) on a loopback port:
// the program's side of the spec's steps, driven with plain HTTP requests instead of a browser.
// 1. GET auth/identity  2. POST auth/identity/challenge  3. authorization code + PKCE with that
// nonce and max_age at the issuer  4. POST auth/identity/exchange with the ID token.

const CLIENT_ID = "keyturn-desktop";
/** A native client's loopback redirect; the port is the program's own (RFC 8252 §7.3). */
const REDIRECT_URI = "http://127.0.0.1:53682/callback";

let issuer: RealIssuer;
let site: TestSite;

beforeAll(async () => {
  issuer = await startRealIssuer({
    clients: [
      {
        client_id: CLIENT_ID,
        application_type: "native",
        token_endpoint_auth_method: "none",
        redirect_uris: ["http://127.0.0.1/callback"],
        grant_types: ["authorization_code"],
        response_types: ["code"],
        id_token_signed_response_alg: "RS256",
      },
    ],
    people: {
      grace: { password: "correct horse", otp: "123456", claims: { name: "Grace Hopper", email: "grace@example.com", groups: ["keyturn-staff"] } },
      linus: { password: "battery staple", claims: { name: "Linus", email: "linus@example.com", groups: ["keyturn-staff"] } },
    },
  });
  site = await testSite("alpha", {
    clock: testClock(Date.now()),
    settings: { "identity-issuer": issuer.url, "identity-client-id": CLIENT_ID, "identity-groups": "keyturn-staff" },
  });
});

afterAll(async () => {
  await site?.close();
  issuer?.stop();
});

/** What the program does in the system browser, then at the token endpoint. */
async function signInAtIssuer(login: string, nonce: string, info: { scopes: string[]; maxAge: number }) {
  const discovery = (await (await fetch(`${issuer.url}/.well-known/openid-configuration`)).json()) as Record<string, string>;
  const verifier = randomBytes(32).toString("base64url");
  const state = randomBytes(16).toString("base64url");
  const authorize = new URL(discovery.authorization_endpoint!);
  authorize.search = new URLSearchParams({
    client_id: CLIENT_ID,
    response_type: "code",
    redirect_uri: REDIRECT_URI,
    scope: info.scopes.join(" "),
    code_challenge: createHash("sha256").update(verifier).digest("base64url"),
    code_challenge_method: "S256",
    nonce,
    max_age: String(info.maxAge),
    state,
  }).toString();

  const callback = await issuer.signIn(authorize.href, login, REDIRECT_URI);
  expect(callback.origin + callback.pathname).toBe(REDIRECT_URI);
  expect(callback.searchParams.get("state")).toBe(state);

  const tokenRes = await fetch(discovery.token_endpoint!, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code: callback.searchParams.get("code")!,
      redirect_uri: REDIRECT_URI,
      client_id: CLIENT_ID,
      code_verifier: verifier,
    }).toString(),
  });
  expect(tokenRes.status).toBe(200);
  return ((await tokenRes.json()) as { id_token: string }).id_token;
}

async function programSignsIn(login: string) {
  const dev = device("alpha");
  const info = (await (await site.request("GET", "/auth/identity")).json()) as {
    enabled: boolean;
    issuer: string;
    clientId: string;
    scopes: string[];
    maxAge: number;
  };
  expect(info).toMatchObject({ enabled: true, issuer: issuer.url, clientId: CLIENT_ID, maxAge: 600 });
  const challenge = (await (await site.request("POST", "/auth/identity/challenge", { body: { device: dev } })).json()) as { nonce: string };
  const idToken = await signInAtIssuer(login, challenge.nonce, info);
  const res = await site.request("POST", "/auth/identity/exchange", { body: { id_token: idToken, device: dev } });
  return { dev, idToken, status: res.status, body: (await res.json()) as Record<string, any> };
}

test("a real OpenID provider: code + PKCE with our nonce, the ID token exchanged for a staff entitlement", async () => {
  const { dev, idToken, status, body } = await programSignsIn("grace");
  const claims = decodeJwt(idToken);
  expect(claims).toMatchObject({ iss: issuer.url, aud: CLIENT_ID, sub: "grace", amr: ["pwd", "otp", "mfa"], groups: ["keyturn-staff"] });
  expect(typeof claims.auth_time).toBe("number");

  expect(status).toBe(200);
  expect(body.entitlement).toMatchObject({
    kind: "staff",
    licensee: "Grace Hopper",
    plan: "staff",
    planTitle: "Staff",
    channels: ["stable", "preview"],
    seats: { used: 1, total: 5 },
  });
  expect(decodeJwt(body.token)).toMatchObject({ kind: "staff", lic: "staff:grace" });

  // The staff token works like a license token.
  const current = await site.request("GET", "/entitlements/current", { token: body.token });
  expect(current.status).toBe(200);
  expect(((await current.json()) as any).entitlement.kind).toBe("staff");
  const refreshed = await site.request("POST", "/entitlements/refresh", { token: body.token, body: { device: dev } });
  expect(refreshed.status).toBe(200);
  const newToken = ((await refreshed.json()) as any).token;
  expect(decodeJwt(newToken).kind).toBe("staff");
  expect((await site.request("POST", "/entitlements/deactivate", { token: newToken })).status).toBe(200);
  const gone = await site.request("GET", "/entitlements/current", { token: body.token });
  expect(((await gone.json()) as any).error).toBe("entitlement_revoked");

  // The ID token, once used, is spent.
  const replay = await site.request("POST", "/auth/identity/exchange", { body: { id_token: idToken, device: dev } });
  expect(replay.status).toBe(409);
  expect(((await replay.json()) as any).error).toBe("token_replayed");
});

test("a real OpenID provider: a sign-in with a password only is mfa_required", async () => {
  const { idToken, status, body } = await programSignsIn("linus");
  expect(decodeJwt(idToken).amr).toEqual(["pwd"]);
  expect(status).toBe(403);
  expect(body.error).toBe("mfa_required");
});
