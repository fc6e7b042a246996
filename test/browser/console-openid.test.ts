/**
 * Console sign-in with the vendor's OpenID issuer, in Chromium: a real provider (oidc-provider)
 * with its own login and consent pages, authorization code with PKCE, the person's groups mapped
 * to scopes by --console-groups, and their changes audited under their subject.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser } from "playwright-core";
import { startRealIssuer, type Person, type RealIssuer } from "../real-issuer";
import { follow, launchBrowser, openContext, startSite, SKIP_BROWSER, type Site } from "./harness";

setDefaultTimeout(30_000);

const CLIENT_ID = "keyturn-console";
const PEOPLE: Record<string, Person & { otp: string }> = {
  grace: { password: "correct horse", otp: "123456", claims: { name: "Grace <Hopper>", email: "grace@example.com", groups: ["keyturn-staff", "support"] } },
  eve: { password: "apple", otp: "654321", claims: { name: "Eve", email: "eve@example.com", groups: ["keyturn-staff"] } },
};

let issuer: RealIssuer;
let site: Site;
let browser: Browser;

beforeAll(async () => {
  if (SKIP_BROWSER) return;
  issuer = await startRealIssuer({
    html: true,
    people: PEOPLE,
    // The issuer's address goes into the site's settings, and the site's into the issuer's client.
    clients: async (issuerUrl) => {
      site = await startSite("alpha", {
        args: [
          "--identity-issuer",
          issuerUrl,
          "--identity-client-id",
          CLIENT_ID,
          "--identity-groups",
          "keyturn-staff",
          "--console-groups",
          "support=licenses:read,licenses:write,stats:read",
        ],
      });
      return [
        {
          client_id: CLIENT_ID,
          application_type: "native",
          token_endpoint_auth_method: "none",
          redirect_uris: [`${site.url}/console/oidc/callback`],
          grant_types: ["authorization_code"],
          response_types: ["code"],
          id_token_signed_response_alg: "RS256",
        },
      ];
    },
  });
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await site?.stop();
  issuer?.stop();
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

    await follow(page, "Licences");
    await page.getByLabel("Licensee", { exact: true }).fill("Made by Grace");
    await page.getByLabel("Organisation", { exact: true }).fill("Support");
    await page.getByRole("button", { name: "Create licence" }).click();
    await page.waitForSelector("#license-key");
    const admin = site.adminToken("auditor", ["audit:read"]);
    const audit = (await (await fetch(`${site.url}/api/v1/admin/audit`, { headers: { authorization: `Bearer ${admin}` } })).json()) as {
      lines: { action: string; actor: string | null }[];
    };
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
