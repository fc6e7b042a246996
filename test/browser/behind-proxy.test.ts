/**
 * The documented set-up without --tls-cert (docs/operating.md, "Behind a TLS proxy"): nginx
 * terminates TLS on loopback in front of the compiled executable speaking plain HTTP, driven by
 * Chromium. The site's public origin is --base-url (https://localhost:PORT): the portal's and the
 * console's sign-ins and a console form POST succeed, their cookies are Secure and `__Host-`.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { freePort } from "../processes";
import { follow, launchBrowser, press, SKIP_BROWSER, startSite, type Site } from "./harness";
import { NGINX, tlsProxy, type TlsProxy } from "./tls-proxy";

setDefaultTimeout(60_000);

// nginx is part of the browser tests' set-up (.ci/run installs it): outside CI, without it, skipped too.
const SKIP = SKIP_BROWSER || (!existsSync(NGINX) && process.env.CI !== "true");

let proxy: TlsProxy;
let site: Site;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let licenseKey = "";
let adminToken = "";

beforeAll(async () => {
  if (SKIP) return;
  proxy = tlsProxy(await freePort());
  site = await startSite("alpha", { baseUrl: proxy.url, args: ["--trust-proxy", "127.0.0.1/32"] });
  await proxy.start(site.url);
  adminToken = site.adminToken("ops", ["admin"]);
  // Through the proxy, trusting its private CA: the admin API works over the public origin.
  const created = await fetch(`${proxy.url}/api/v1/admin/licenses`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${adminToken}` },
    body: JSON.stringify({ licensee: "Grace", organization: "Navy", plan: "pro", planTitle: "Pro", seats: 2, channels: ["stable"] }),
    tls: { ca: readFileSync(proxy.ca, "utf8") },
  });
  expect(created.status).toBe(201);
  licenseKey = ((await created.json()) as { key: string }).key;
  browser = await launchBrowser();
  // The proxy's certificate is from a private CA the browser's profile does not hold.
  context = await browser.newContext({ ignoreHTTPSErrors: true });
  page = await context.newPage();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await proxy?.stop();
  await site?.stop();
});

const cookieNamed = async (name: string) => (await context.cookies(proxy.url)).find((c) => c.name === name);

describe.skipIf(SKIP)("behind a TLS-terminating proxy", () => {
  test("the portal: sign-in with the key succeeds into a Secure __Host- cookie", async () => {
    await page.goto(`${proxy.url}/portal/`);
    await page.getByLabel("Licence key").fill(licenseKey);
    await press(page, "Sign in");
    await page.waitForSelector("#installations");
    await expect(page.locator("#licensee").textContent()).resolves.toBe("Grace");
    expect(await cookieNamed("__Host-keyturn-portal")).toMatchObject({ secure: true, httpOnly: true, sameSite: "Strict", path: "/" });
    expect(await cookieNamed("keyturn-portal")).toBeUndefined();
  });

  test("the console: sign-in and a form POST (a new licence) succeed; the session cookie is Secure and __Host-", async () => {
    await page.goto(`${proxy.url}/console/`);
    expect(new URL(page.url()).pathname).toBe("/console/sign-in");
    await page.getByLabel("Admin token").fill(adminToken);
    await press(page, "Sign in with the token");
    await expect(page.locator("h1").textContent()).resolves.toBe("Dashboard");
    expect(await cookieNamed("__Host-keyturn-console")).toMatchObject({ secure: true, httpOnly: true, sameSite: "Strict", path: "/" });

    await follow(page, "Licences");
    await page.getByLabel("Licensee", { exact: true }).fill("Ada");
    await page.getByLabel("Organisation", { exact: true }).fill("Engines");
    await press(page, "Create licence");
    await page.waitForSelector("#license-key");
    expect(new URL(page.url()).origin).toBe(proxy.url);
    expect((await page.locator("#license-key").textContent())!.trim()).toMatch(/^[0-9A-Z-]{20,}$/);
  });
});
