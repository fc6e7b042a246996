/**
 * Console sign-in with the vendor's OpenID issuer, in Chromium: a real provider (oidc-provider)
 * with its own login and consent pages, authorization code with PKCE, the person's groups mapped
 * to scopes by --console-groups, and their changes audited under their subject.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair } from "jose";
import Provider from "oidc-provider";
import type { Browser } from "playwright-core";
import { launchBrowser, openContext, startSite, SKIP_BROWSER, type Site } from "./harness";

setDefaultTimeout(30_000);

const CLIENT_ID = "keyturn-console";
const PEOPLE: Record<string, { password: string; otp: string; claims: Record<string, unknown> }> = {
  grace: { password: "correct horse", otp: "123456", claims: { name: "Grace <Hopper>", email: "grace@example.com", groups: ["keyturn-staff", "support"] } },
  eve: { password: "apple", otp: "654321", claims: { name: "Eve", email: "eve@example.com", groups: ["keyturn-staff"] } },
};

let server: Server;
let issuer: string;
let site: Site;
let browser: Browser;

async function readBody(req: AsyncIterable<Uint8Array>): Promise<string> {
  const chunks: Uint8Array[] = [];
  for await (const c of req) chunks.push(c);
  return Buffer.concat(chunks).toString("utf8");
}

/** The issuer's login and consent pages, as HTML forms a person fills in. */
const loginPage = (uid: string) => `<!doctype html><title>Issuer</title><form method="post" action="/interaction/${uid}/login">
<label>Username <input name="login"></label><label>Password <input name="password" type="password"></label><label>One-time code <input name="otp"></label>
<button type="submit">Log in</button></form>`;
const consentPage = (uid: string) => `<!doctype html><title>Issuer</title><form method="post" action="/interaction/${uid}/confirm"><button type="submit">Allow</button></form>`;

beforeAll(async () => {
  if (SKIP_BROWSER) return;
  server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  site = await startSite("alpha", {
    args: ["--identity-issuer", issuer, "--identity-client-id", CLIENT_ID, "--identity-groups", "keyturn-staff", "--console-groups", "support=licenses:read,licenses:write,stats:read"],
  });
  const { privateKey } = await generateKeyPair("RS256", { extractable: true });
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: CLIENT_ID,
        application_type: "native",
        token_endpoint_auth_method: "none",
        redirect_uris: [`${site.url}/console/oidc/callback`],
        grant_types: ["authorization_code"],
        response_types: ["code"],
        id_token_signed_response_alg: "RS256",
      },
    ],
    pkce: { required: () => true },
    jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: "op-2026-11", alg: "RS256", use: "sig" }] },
    cookies: { keys: [randomBytes(16).toString("hex")] },
    claims: { openid: ["sub", "amr", "auth_time"], profile: ["name", "groups"], email: ["email"] },
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: false } },
    ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600, AuthorizationCode: 60 },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    findAccount: async (_ctx: unknown, id: string) => (PEOPLE[id] ? { accountId: id, claims: async () => ({ sub: id, ...PEOPLE[id]!.claims }) } : undefined),
  });
  provider.use(async (ctx, next) => {
    const m = /^\/interaction\/([^/]+)(?:\/(login|confirm))?$/.exec(ctx.path);
    if (!m) return next();
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    if (ctx.method === "GET") {
      (ctx as unknown as { type: string }).type = "html";
      ctx.body = details.prompt.name === "login" ? loginPage(m[1]!) : consentPage(m[1]!);
      return;
    }
    let result: Record<string, unknown>;
    if (m[2] === "login") {
      const form = new URLSearchParams(await readBody(ctx.req));
      const person = PEOPLE[form.get("login") ?? ""];
      if (!person || person.password !== form.get("password")) {
        ctx.status = 403;
        ctx.body = "wrong password";
        return;
      }
      result = { login: { accountId: form.get("login"), amr: form.get("otp") === person.otp ? ["pwd", "otp", "mfa"] : ["pwd"] } };
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
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await site?.stop();
  server?.closeAllConnections();
  server?.close();
});

async function signInAtIssuer(login: string, landsOn: (path: string) => boolean) {
  const ctx = await openContext(browser, "desktop", site.url);
  const p = ctx.page;
  await p.goto(`${site.url}/console/sign-in`);
  await p.getByRole("link", { name: "Sign in with your organisation's account" }).click();
  await p.getByLabel("Username").fill(login);
  await p.getByLabel("Password").fill(PEOPLE[login]!.password);
  await p.getByLabel("One-time code").fill(PEOPLE[login]!.otp);
  await p.getByRole("button", { name: "Log in" }).click();
  await p.getByRole("button", { name: "Allow" }).click();
  await p.waitForURL((u) => u.origin === site.url && landsOn(u.pathname));
  return ctx;
}

describe.skipIf(SKIP_BROWSER)("console sign-in with the OpenID issuer", () => {
  test("a staff member signs in with code and PKCE; their groups give the scopes; their changes are audited under their subject", async () => {
    const { context, page, problems } = await signInAtIssuer("grace", (path) => path === "/console/");
    await expect(page.locator("h1").textContent()).resolves.toBe("Dashboard");
    await expect(page.locator("header .muted").textContent()).resolves.toBe("Grace <Hopper>");
    expect(await page.getByRole("link", { name: "Licences" }).count()).toBe(1);
    expect(await page.getByRole("link", { name: "Audit trail" }).count()).toBe(0);
    const cookies = await context.cookies();
    expect(cookies.filter((c) => c.name === "keyturn-console")).toHaveLength(1);
    expect(cookies.filter((c) => c.name === "keyturn-oidc")).toHaveLength(0);

    await page.getByRole("link", { name: "Licences" }).click();
    await page.getByLabel("Licensee", { exact: true }).fill("Made by Grace");
    await page.getByLabel("Organisation", { exact: true }).fill("Support");
    await page.getByRole("button", { name: "Create licence" }).click();
    await page.waitForSelector("#license-key");
    const admin = site.adminToken("auditor", ["audit:read"]);
    const audit = (await (await fetch(`${site.url}/api/v1/admin/audit`, { headers: { authorization: `Bearer ${admin}` } })).json()) as { lines: { action: string; actor: string | null }[] };
    expect(audit.lines.find((l) => l.action === "license-create")?.actor).toBe("staff:grace (Grace <Hopper>)");
    expect((await page.goto(`${site.url}/console/audit`))!.status()).toBe(403);
    expect(problems).toEqual([]);
    await context.close();
  });

  test("a person whose groups map to no scope gets no session", async () => {
    const { context, page } = await signInAtIssuer("eve", (path) => path === "/console/oidc/callback");
    expect(page.url()).toContain("/console/oidc/callback");
    await expect(page.getByRole("alert").textContent()).resolves.toContain("None of your groups");
    await page.goto(`${site.url}/console/`);
    expect(new URL(page.url()).pathname).toBe("/console/sign-in");
    await context.close();
  });

  test("a callback replayed or from another browser opens nothing", async () => {
    const start = await fetch(`${site.url}/console/oidc/start`, { redirect: "manual" });
    const state = new URL(start.headers.get("location")!).searchParams.get("state")!;
    const stolen = await fetch(`${site.url}/console/oidc/callback?state=${state}&code=abc`, { redirect: "manual" });
    expect(stolen.status).toBe(401);
    expect(stolen.headers.get("set-cookie")).toBeNull();
  });
});
