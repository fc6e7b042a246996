import { expect } from "bun:test";
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair } from "jose";
import Provider from "oidc-provider";

/**
 * A real OpenID provider (the oidc-provider package) on a loopback port, with its own login and
 * consent steps as plain form posts, for tests that drive a sign-in with HTTP requests instead of
 * a browser. People can be disabled (login refused, no account found) while the provider runs.
 */
export interface Person {
  readonly password: string;
  readonly otp?: string;
  readonly claims: Record<string, unknown>;
  disabled?: boolean;
}

export interface RealIssuer {
  readonly url: string;
  readonly people: Record<string, Person>;
  /**
   * Follows `authorizeUrl` through the login (with the one-time code when the person has one) and
   * consent to the client's redirect URI; returns that URL with its code and state.
   */
  signIn(authorizeUrl: string, login: string, redirectPrefix: string): Promise<URL>;
  stop(): void;
}

export interface RealIssuerOptions {
  /** The registered clients, or a function of the issuer's address that gives them (once it listens). */
  readonly clients: Record<string, unknown>[] | ((issuerUrl: string) => Promise<Record<string, unknown>[]>);
  readonly people: Record<string, Person>;
  /** Seconds an ID token lives (the provider's ttl.IdToken). */
  readonly idTokenSeconds?: number;
  /** Login and consent as HTML forms a person fills in (a browser test); JSON naming the prompt otherwise. */
  readonly html?: boolean;
}

/** The issuer's login and consent pages, as HTML forms a person fills in. */
const loginPage = (uid: string) => `<!doctype html><title>Issuer</title><form method="post" action="/interaction/${uid}/login">
<label>Username <input name="login"></label><label>Password <input name="password" type="password"></label><label>One-time code <input name="otp"></label>
<button type="submit">Log in</button></form>`;
const consentPage = (uid: string) =>
  `<!doctype html><title>Issuer</title><form method="post" action="/interaction/${uid}/confirm"><button type="submit">Allow</button></form>`;

async function readBody(req: AsyncIterable<Uint8Array>): Promise<string> {
  const chunks: Uint8Array[] = [];
  for await (const c of req) chunks.push(c);
  return Buffer.concat(chunks).toString("utf8");
}

export async function startRealIssuer(o: RealIssuerOptions): Promise<RealIssuer> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { privateKey } = await generateKeyPair("RS256", { extractable: true });
  const people = o.people;
  const provider = new Provider(url, {
    clients: typeof o.clients === "function" ? await o.clients(url) : o.clients,
    pkce: { required: () => true },
    jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: "op-2026-11", alg: "RS256", use: "sig" }] },
    cookies: { keys: [randomBytes(16).toString("hex")] },
    // amr and auth_time with the openid scope, groups with profile; all of them in the ID token.
    claims: { openid: ["sub", "amr", "auth_time"], profile: ["name", "groups"], email: ["email"] },
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: false } },
    ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: o.idTokenSeconds ?? 600, AuthorizationCode: 60 },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    findAccount: async (_ctx: unknown, id: string) => {
      const person = people[id];
      return person && !person.disabled ? { accountId: id, claims: async () => ({ sub: id, ...person.claims }) } : undefined;
    },
  });

  // The issuer's own login and consent pages, as plain form posts.
  provider.use(async (ctx, next) => {
    const m = /^\/interaction\/([^/]+)(?:\/(login|confirm))?$/.exec(ctx.path);
    if (!m) return next();
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    if (ctx.method === "GET") {
      if (o.html) {
        (ctx as unknown as { type: string }).type = "html";
        ctx.body = details.prompt.name === "login" ? loginPage(m[1]!) : consentPage(m[1]!);
      } else ctx.body = { prompt: details.prompt.name };
      return;
    }
    let result: Record<string, unknown>;
    if (m[2] === "login") {
      const form = new URLSearchParams(await readBody(ctx.req));
      const person = people[form.get("login") ?? ""];
      if (!person || person.disabled || person.password !== form.get("password")) {
        ctx.status = 403;
        ctx.body = { error: "wrong password or disabled account" };
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

  return {
    url,
    people,
    async signIn(authorizeUrl, login, redirectPrefix) {
      const jar = new Map<string, string>();
      const go = async (target: string, init: RequestInit = {}) => {
        const headers = new Headers(init.headers);
        headers.set("cookie", [...jar].map(([k, v]) => `${k}=${v}`).join("; "));
        const res = await fetch(new URL(target, url), { ...init, headers, redirect: "manual" });
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
      const person = people[login]!;
      let location = authorizeUrl;
      for (let hop = 0; hop < 10 && !location.startsWith(redirectPrefix); hop++) {
        let res = await go(location);
        if (res.status === 200) {
          const { prompt } = (await res.json()) as { prompt: string };
          res =
            prompt === "login"
              ? await go(`${location}/login`, form({ login, password: person.password, ...(person.otp ? { otp: person.otp } : {}) }))
              : await go(`${location}/confirm`, form({}));
        }
        if (res.status !== 303) throw new Error(`the issuer answered ${res.status} at ${new URL(location).pathname}`);
        location = new URL(res.headers.get("location")!, url).href;
      }
      expect(location.startsWith(redirectPrefix)).toBe(true);
      return new URL(location);
    },
    stop() {
      server.closeAllConnections();
      server.close();
    },
  };
}
