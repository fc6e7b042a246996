import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { decodeJwt, exportJWK, generateKeyPair } from "jose";
import Provider from "oidc-provider";
import { device, testClock, testSite, type TestSite } from "./helpers";

// Staff sign-in against a real OpenID provider (the oidc-provider package) on a loopback port:
// the program's side of the spec's steps, driven with plain HTTP requests instead of a browser.
// 1. GET auth/identity  2. POST auth/identity/challenge  3. authorization code + PKCE with that
// nonce and max_age at the issuer  4. POST auth/identity/exchange with the ID token.

const CLIENT_ID = "keyturn-desktop";
/** A native client's loopback redirect; the port is the program's own (RFC 8252 §7.3). */
const REDIRECT_URI = "http://127.0.0.1:53682/callback";

const PEOPLE: Record<string, { password: string; otp?: string; claims: Record<string, unknown> }> = {
  grace: { password: "correct horse", otp: "123456", claims: { name: "Grace Hopper", email: "grace@example.com", groups: ["keyturn-staff"] } },
  linus: { password: "battery staple", claims: { name: "Linus", email: "linus@example.com", groups: ["keyturn-staff"] } },
};

let server: Server;
let issuer: string;
let site: TestSite;

beforeAll(async () => {
  server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { privateKey } = await generateKeyPair("RS256", { extractable: true });

  const provider = new Provider(issuer, {
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
    pkce: { required: () => true },
    jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: "op-2026-11", alg: "RS256", use: "sig" }] },
    cookies: { keys: [randomBytes(16).toString("hex")] },
    // amr and auth_time with the openid scope, groups with profile; all of them in the ID token.
    claims: { openid: ["sub", "amr", "auth_time"], profile: ["name", "groups"], email: ["email"] },
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: false } },
    ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600, AuthorizationCode: 60 },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    findAccount: async (_ctx: unknown, id: string) =>
      PEOPLE[id] ? { accountId: id, claims: async () => ({ sub: id, ...PEOPLE[id]!.claims }) } : undefined,
  });

  // The issuer's own login and consent pages, as plain form posts.
  provider.use(async (ctx, next) => {
    const m = /^\/interaction\/[^/]+(?:\/(login|confirm))?$/.exec(ctx.path);
    if (!m) return next();
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    if (ctx.method === "GET") {
      ctx.body = { prompt: details.prompt.name };
      return;
    }
    let result: Record<string, unknown>;
    if (m[1] === "login") {
      const form = new URLSearchParams(await readBody(ctx.req));
      const person = PEOPLE[form.get("login") ?? ""];
      if (!person || person.password !== form.get("password")) {
        ctx.status = 403;
        ctx.body = { error: "wrong password" };
        return;
      }
      const secondFactor = person.otp !== undefined && form.get("otp") === person.otp;
      result = { login: { accountId: form.get("login"), amr: secondFactor ? ["pwd", "otp", "mfa"] : ["pwd"] } };
    } else {
      const grant = new provider.Grant({ accountId: details.session!.accountId, clientId: String(details.params.client_id) });
      const missing = details.prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[] };
      if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "));
      if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
      result = { consent: { grantId: await grant.save() } };
    }
    ctx.status = 303;
    ctx.redirect(await provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: false }));
  });
  server.on("request", provider.callback());

  site = await testSite("alpha", {
    clock: testClock(Date.now()),
    settings: { "identity-issuer": issuer, "identity-client-id": CLIENT_ID, "identity-groups": "keyturn-staff" },
  });
});

afterAll(async () => {
  await site?.close();
  server?.closeAllConnections();
  server?.close();
});

async function readBody(req: AsyncIterable<Uint8Array>): Promise<string> {
  const chunks: Uint8Array[] = [];
  for await (const c of req) chunks.push(c);
  return Buffer.concat(chunks).toString("utf8");
}

/** What the program does in the system browser, as plain requests with a cookie jar. */
async function signInAtIssuer(login: string, password: string, otp: string | undefined, nonce: string, info: { scopes: string[]; maxAge: number }) {
  const jar = new Map<string, string>();
  const go = async (url: string, init: RequestInit = {}) => {
    const headers = new Headers(init.headers);
    headers.set("cookie", [...jar].map(([k, v]) => `${k}=${v}`).join("; "));
    const res = await fetch(new URL(url, issuer), { ...init, headers, redirect: "manual" });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(";");
      const eq = pair!.indexOf("=");
      jar.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    return res;
  };
  const form = (fields: Record<string, string>) => ({
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields).toString(),
  });

  const discovery = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as Record<string, string>;
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

  let location = authorize.href;
  for (let hop = 0; hop < 10 && !location.startsWith(REDIRECT_URI); hop++) {
    let res = await go(location);
    if (res.status === 200) {
      const { prompt } = (await res.json()) as { prompt: string };
      res =
        prompt === "login"
          ? await go(`${location}/login`, form({ login, password, ...(otp ? { otp } : {}) }))
          : await go(`${location}/confirm`, form({}));
    }
    expect(res.status).toBe(303);
    location = new URL(res.headers.get("location")!, issuer).href;
  }
  const callback = new URL(location);
  expect(callback.origin + callback.pathname).toBe(REDIRECT_URI);
  expect(callback.searchParams.get("state")).toBe(state);

  const tokenRes = await go(
    discovery.token_endpoint!,
    form({ grant_type: "authorization_code", code: callback.searchParams.get("code")!, redirect_uri: REDIRECT_URI, client_id: CLIENT_ID, code_verifier: verifier }),
  );
  expect(tokenRes.status).toBe(200);
  return ((await tokenRes.json()) as { id_token: string }).id_token;
}

async function programSignsIn(login: string, password: string, otp?: string) {
  const dev = device("alpha");
  const info = (await (await site.request("GET", "/auth/identity")).json()) as { enabled: boolean; issuer: string; clientId: string; scopes: string[]; maxAge: number };
  expect(info).toMatchObject({ enabled: true, issuer, clientId: CLIENT_ID, maxAge: 600 });
  const challenge = (await (await site.request("POST", "/auth/identity/challenge", { body: { device: dev } })).json()) as { nonce: string };
  const idToken = await signInAtIssuer(login, password, otp, challenge.nonce, info);
  const res = await site.request("POST", "/auth/identity/exchange", { body: { id_token: idToken, device: dev } });
  return { dev, idToken, status: res.status, body: (await res.json()) as Record<string, any> };
}

test("a real OpenID provider: code + PKCE with our nonce, the ID token exchanged for a staff entitlement", async () => {
  const { dev, idToken, status, body } = await programSignsIn("grace", "correct horse", "123456");
  const claims = decodeJwt(idToken);
  expect(claims).toMatchObject({ iss: issuer, aud: CLIENT_ID, sub: "grace", amr: ["pwd", "otp", "mfa"], groups: ["keyturn-staff"] });
  expect(typeof claims.auth_time).toBe("number");

  expect(status).toBe(200);
  expect(body.entitlement).toMatchObject({ kind: "staff", licensee: "Grace Hopper", plan: "staff", planTitle: "Staff", channels: ["stable", "preview"], seats: { used: 1, total: 5 } });
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
  const { idToken, status, body } = await programSignsIn("linus", "battery staple");
  expect(decodeJwt(idToken).amr).toEqual(["pwd"]);
  expect(status).toBe(403);
  expect(body.error).toBe("mfa_required");
});
