/**
 * Issue 30, done when "a customer who lost the key gets a working new one through the e-mail link in
 * Chromium": the compiled executable mails through a real SMTP server on loopback; the customer asks
 * for a link at the portal, opens the link read from what the server received, reissues the key, and
 * the key that arrives by mail activates while the lost one is refused. Seats are kept.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { device } from "../helpers";
import type { WrittenRelease } from "../release-tree";
import { startSmtpReceiver, type SmtpReceiver } from "../smtp-receiver";
import { follow, launchBrowser, openContext, press, screenshot, SKIP_BROWSER, startSite, type Site } from "./harness";

setDefaultTimeout(60_000);

let site: Site;
let smtp: SmtpReceiver;
let browser: Browser;
let page: Page;
let problems: string[];
let offsite: string[];
let release: WrittenRelease;

const EMAIL = "grace@example.org";
const KEY_LINE = /^ {4}(AL-[0-9A-Z-]+)$/m;
const LINK = /(http:\/\/127\.0\.0\.1:\d+\/portal\/link\?token=[0-9A-Z]{32})/;

const api = (path: string, body: unknown, token?: string) =>
  fetch(`${site.url}/api/v1${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });

/** The text of the `n`th mail (1-based) the SMTP server received, waiting for it. */
async function mailText(n: number): Promise<string> {
  await smtp.waitFor(n, 20_000);
  return smtp.received[n - 1]!.mail.text ?? "";
}

beforeAll(async () => {
  if (SKIP_BROWSER) return;
  smtp = await startSmtpReceiver();
  site = await startSite("alpha", {
    args: ["--smtp-url", smtp.url, "--mail-from", "Example Software <licences@example.com>"],
    prepare: (tree) => (release = tree.add({ version: "3.1.0" })),
  });
  browser = await launchBrowser();
  ({ page, problems, offsite } = await openContext(browser, "desktop", site.url));
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await site?.stop();
  await smtp?.stop();
});

describe.skipIf(SKIP_BROWSER)("portal sign-in by e-mail link", () => {
  test("a customer who lost the key gets a working new one through the mailed link", async () => {
    // A sale: the licence is made with the buyer's address; its key is mailed.
    const admin = site.adminToken("shop", ["licenses:write"]);
    const created = await api("/admin/licenses", { licensee: "Grace", plan: "pro", planTitle: "Pro", seats: 3, channels: ["stable"], email: EMAIL }, admin);
    expect(created.status).toBe(201);
    const lost = KEY_LINE.exec(await mailText(1))![1]!;
    expect((await api("/licenses/activate", { key: lost, device: device("alpha", { name: "Desk PC" }) })).status).toBe(200);

    // The key is lost. At the portal the customer asks for a sign-in link by address.
    await page.goto(`${site.url}/portal/`);
    await page.getByLabel("E-mail address").fill(EMAIL);
    await press(page, "Mail me a sign-in link");
    await expect(page.locator("h1").textContent()).resolves.toBe("Look in your mailbox");
    const link = LINK.exec(await mailText(2))![1]!;
    expect(smtp.received[1]!.envelopeTo).toEqual([EMAIL]);

    // The link's page signs in with a button (opening it spends nothing).
    await page.goto(link);
    await press(page, "Sign in to my licences");
    await expect(page.locator("#signed-in-as").textContent()).resolves.toBe(EMAIL);
    const section = page.locator("section.licence");
    await expect(section.locator(".installations tbody tr td:first-child").allTextContents()).resolves.toEqual(["Desk PC"]);
    await expect(section.locator(".downloads a").textContent()).resolves.toBe(release.installer);
    const [download] = await Promise.all([page.waitForEvent("download"), section.locator(".downloads a").click()]);
    expect(Buffer.from(await Bun.file((await download.path())!).bytes()).equals(Buffer.from(release.installerBytes))).toBe(true);
    await screenshot(page, "portal-email-1280");

    // Reissue: confirmed, then mailed to the address; never shown on the page.
    await follow(page, "Lost the key? Send me a new one");
    await expect(page.locator("#confirm-question").textContent()).resolves.toContain(`Send a new key for the licence of Grace (Pro) to ${EMAIL}?`);
    await press(page, "Send a new key");
    await expect(page.locator(".notice").first().textContent()).resolves.toContain(`is on its way to ${EMAIL}`);
    const text = await mailText(3);
    const fresh = KEY_LINE.exec(text)![1]!;
    expect(fresh).not.toBe(lost);
    expect(await page.content()).not.toContain(fresh);

    // The new key works, the lost one no longer does, and the seat taken before is kept.
    expect((await api("/licenses/activate", { key: lost, device: device("alpha") })).status).toBe(403);
    const activated = await api("/licenses/activate", { key: fresh, device: device("alpha", { name: "New laptop" }) });
    expect(activated.status).toBe(200);
    expect(((await activated.json()) as { entitlement: { seats: { used: number } } }).entitlement.seats.used).toBe(2);

    // The link was used once: a second use is refused.
    await page.goto(link);
    const [again] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === "POST"),
      page.getByRole("button", { name: "Sign in to my licences" }).click(),
    ]);
    expect(again.status()).toBe(401);
  });

  test("an unknown address is answered as a known one, and nothing is mailed", async () => {
    const before = smtp.received.length;
    const stranger = await openContext(browser, "phone", site.url);
    await stranger.page.goto(`${site.url}/portal/`);
    await stranger.page.getByLabel("E-mail address").fill("stranger@example.org");
    await press(stranger.page, "Mail me a sign-in link");
    await expect(stranger.page.locator("h1").textContent()).resolves.toBe("Look in your mailbox");
    expect(await stranger.page.evaluate("document.documentElement.scrollWidth - window.innerWidth")).toBeLessThanOrEqual(0);
    await Bun.sleep(2_000); // the worker's rounds are a second apart: a mail would have gone by now
    expect(smtp.received.length).toBe(before);
    expect(stranger.problems).toEqual([]);
    await stranger.context.close();
  });

  test("no page broke its CSP or threw, and none asked anything of another site", () => {
    expect(problems).toEqual([]);
    expect(offsite).toEqual([]);
  });
});
