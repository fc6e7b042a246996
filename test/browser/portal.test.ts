/**
 * The customers' portal in a real Chromium against the compiled executable: sign in with the key,
 * see the installations, free a seat, download the newest installer, activate offline with the
 * client kit's request code; wrong keys meet the sign-in budget (429).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { offlineRequestCode } from "../../src/client/offline";
import { device } from "../helpers";
import type { WrittenRelease } from "../release-tree";
import { launchBrowser, openContext, press, screenshot, startSite, SKIP_BROWSER, type Site } from "./harness";

setDefaultTimeout(60_000);

const XSS_DEVICE = `<img src=x onerror="window.__xss = 1">Old laptop`;

let site: Site;
let browser: Browser;
let page: Page;
let problems: string[];
let offsite: string[];
let release: WrittenRelease;
let key = "";

const api = (path: string, body: unknown, token?: string) =>
  fetch(`${site.url}/api/v1${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });

beforeAll(async () => {
  if (SKIP_BROWSER) return;
  site = await startSite("alpha", { args: ["--rate-limit-signin", "12/60s"], prepare: (tree) => (release = tree.add({ version: "3.1.0" })) });
  const admin = site.adminToken("ops", ["admin"]);
  const created = (await (
    await api("/admin/licenses", { licensee: "Grace", organization: "Navy", plan: "pro", planTitle: "Pro", seats: 3, channels: ["stable"] }, admin)
  ).json()) as { key: string };
  key = created.key;
  for (const name of [XSS_DEVICE, "Desk PC"]) expect((await api("/licenses/activate", { key, device: device("alpha", { name }) })).status).toBe(200);
  browser = await launchBrowser();
  ({ page, problems, offsite } = await openContext(browser, "desktop", site.url));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await site?.stop();
});

async function signIn(p: Page, licenseKey: string): Promise<void> {
  await p.goto(`${site.url}/portal/`);
  await p.getByLabel("Licence key").fill(licenseKey);
  await press(p, "Sign in");
}

describe.skipIf(SKIP_BROWSER)("portal", () => {
  test("signs in with the licence key and lists the installations, names as text; the key is not kept in the browser", async () => {
    await signIn(page, key);
    await page.waitForSelector("#installations");
    await expect(page.locator("#licensee").textContent()).resolves.toBe("Grace");
    await expect(page.locator("#seats").textContent()).resolves.toBe("2 / 3");
    const names = await page.locator("#installations tbody tr td:first-child").allTextContents();
    expect(names.sort()).toEqual(["Desk PC", XSS_DEVICE].sort());
    expect(await page.evaluate("window.__xss")).toBeUndefined();
    const cookies = await page.context().cookies();
    expect(cookies.map((c) => c.name)).toEqual(["keyturn-portal"]);
    expect(cookies[0]).toMatchObject({ httpOnly: true, sameSite: "Strict" });
    expect(JSON.stringify(cookies)).not.toContain(key);
    expect(await page.evaluate("JSON.stringify([Object.keys(localStorage), Object.keys(sessionStorage)])")).toBe("[[],[]]");
    expect(await page.content()).not.toContain(key);
    await screenshot(page, "portal-1280");
    const phone = await openContext(browser, "phone", site.url);
    await signIn(phone.page, key);
    await phone.page.waitForSelector("#installations");
    expect(await phone.page.evaluate("document.documentElement.scrollWidth - window.innerWidth")).toBeLessThanOrEqual(0);
    await screenshot(phone.page, "portal-375");
    await phone.context.close();
  });

  test("deactivates one installation to free a seat", async () => {
    await press(page, `Deactivate ${XSS_DEVICE}`);
    await page.waitForURL(`${site.url}/portal/`);
    await expect(page.locator("#seats").textContent()).resolves.toBe("1 / 3");
    expect(await page.locator("#installations tbody tr td:first-child").allTextContents()).toEqual(["Desk PC"]);
  });

  test("downloads the newest installer of its channel, the bytes the release tree holds", async () => {
    const link = page.locator("#downloads a");
    await expect(link.textContent()).resolves.toBe(release.installer);
    const [download] = await Promise.all([page.waitForEvent("download"), link.click()]);
    const bytes = await Bun.file((await download.path())!).bytes();
    expect(Buffer.from(bytes).equals(Buffer.from(release.installerBytes))).toBe(true);
  });

  test("offline activation: the kit's request code in, an answer code that is a valid entitlement out", async () => {
    const code = offlineRequestCode({ key, device: device("alpha", { name: "Air-gapped PC" }) });
    await page.getByLabel("Request code shown by the program").fill(code);
    await press(page, "Make the answer code");
    const answer = (await page.locator("#answer-code").inputValue()).trim();
    const current = await fetch(`${site.url}/api/v1/entitlements/current`, { headers: { authorization: `Bearer ${answer}` } });
    expect(current.status).toBe(200);
    const entitlement = ((await current.json()) as { entitlement: { licensee: string; seats: { used: number } } }).entitlement;
    expect(entitlement.licensee).toBe("Grace");
    expect(entitlement.seats.used).toBe(2);
    await expect(page.locator("#seats").textContent()).resolves.toBe("2 / 3");
    // The page says until when the answer works: the token's exp (--offline-token-ttl, 366 days by default).
    const exp = JSON.parse(Buffer.from(answer.split(".")[1]!, "base64url").toString()).exp as number;
    await expect(page.locator("#answer-valid-until").textContent()).resolves.toStartWith(
      `This answer code works until ${new Date(exp * 1000).toISOString().slice(0, 16).replace("T", " ")} UTC`,
    );
    await page.getByRole("button", { name: "Copy answer code" }).click();
    await page.getByRole("button", { name: "Copied" }).waitFor({ timeout: 5000 });
    expect(await page.evaluate("navigator.clipboard.readText()")).toBe(answer);
    await screenshot(page, "portal-offline-1280");
  });

  test("a request code made for another key is refused", async () => {
    const other = offlineRequestCode({ key: "AAAAA-BBBBB-CCCCC-DDDDD", device: device("alpha") });
    await page.goto(`${site.url}/portal/`);
    await page.getByLabel("Request code shown by the program").fill(other);
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === "POST"),
      page.getByRole("button", { name: "Make the answer code" }).click(),
    ]);
    expect(response.status()).toBe(400);
  });

  test("signing out ends the portal session", async () => {
    await page.goto(`${site.url}/portal/`);
    const cookie = (await page.context().cookies())[0]!;
    await press(page, "Sign out");
    await page.getByLabel("Licence key").waitFor({ timeout: 5000 });
    const replay = await fetch(`${site.url}/portal/`, { headers: { cookie: `${cookie.name}=${cookie.value}` } });
    expect(await replay.text()).toContain('name="key"');
  });

  test("wrong keys are refused, then limited by the sign-in budget (429)", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 14; i++) {
      const r = await fetch(`${site.url}/portal/sign-in`, {
        method: "POST",
        headers: { origin: site.url, "content-type": "application/x-www-form-urlencoded" },
        body: `key=WRONG-${i}-KEY-ABCDE`,
      });
      statuses.push(r.status);
    }
    expect(statuses[0]).toBe(403);
    expect(statuses.at(-1)).toBe(429);
    expect(statuses.filter((s) => s !== 403 && s !== 429)).toEqual([]);
  });

  test("no page of the portal broke its CSP or threw, and none asked anything of another site (a closed network will do)", () => {
    expect(problems).toEqual([]);
    expect(offsite).toEqual([]);
  });
});
