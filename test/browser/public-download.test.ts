/**
 * A public lane's download page in a real Chromium against the compiled executable: a visitor with
 * no token and no session gets the installer for its platform (told by its User-Agent), the others
 * listed; a private lane has no page.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import type { WrittenRelease } from "../release-tree";
import { launchBrowser, openContext, screenshot, startSite, SKIP_BROWSER, type Site } from "./harness";

setDefaultTimeout(60_000);

let site: Site;
let browser: Browser;
let page: Page;
let problems: string[];
let offsite: string[];
const r: Record<string, WrittenRelease> = {};

beforeAll(async () => {
  if (SKIP_BROWSER) return;
  site = await startSite("alpha", {
    args: ["--platforms", "win-x64,linux-x64", "--public-lanes", "alpha/preview"],
    prepare: (tree) => {
      r.win = tree.add({ version: "0.9.0", channel: "preview", platform: "win-x64" });
      r.linux = tree.add({ version: "0.9.0", channel: "preview", platform: "linux-x64", installer: "alpha-0.9.0-linux-x64.AppImage" });
      r.private = tree.add({ version: "1.0.0", channel: "stable", platform: "linux-x64", installer: "alpha-1.0.0-linux-x64.AppImage" });
    },
  });
  browser = await launchBrowser();
  ({ page, problems, offsite } = await openContext(browser, "desktop", site.url));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await site?.stop();
});

describe.skipIf(SKIP_BROWSER)("a public lane's download page", () => {
  test("offers this browser's platform first (headless Chromium on Linux: linux-x64) and downloads it without a token", async () => {
    await page.goto(`${site.url}/download/alpha/preview`);
    const primary = page.locator("#download");
    await expect(primary.getAttribute("data-platform")).resolves.toBe("linux-x64");
    await expect(page.locator("#platforms a").allTextContents()).resolves.toEqual([r.win!.installer]);
    await screenshot(page, "download-page");
    const [download] = await Promise.all([page.waitForEvent("download"), primary.click()]);
    expect(download.suggestedFilename()).toBe(r.linux!.installer);
    const bytes = await Bun.file((await download.path())!).bytes();
    expect(Buffer.from(bytes).equals(Buffer.from(r.linux!.installerBytes))).toBe(true);
    // The other platform's link downloads too.
    const [other] = await Promise.all([page.waitForEvent("download"), page.locator("#platforms a").click()]);
    expect(Buffer.from(await Bun.file((await other.path())!).bytes()).equals(Buffer.from(r.win!.installerBytes))).toBe(true);
    expect(problems).toEqual([]);
    expect(offsite).toEqual([]);
  });

  test("the private lane has no page, and its installer is refused without a token", async () => {
    const res = await page.goto(`${site.url}/download/alpha/stable`);
    expect(res?.status()).toBe(404);
    await expect(page.locator("main").textContent()).resolves.toContain("There is no public download here.");
    const refused = await fetch(`${site.url}/api/v1/updates/${r.private!.lane}/${r.private!.installer}`);
    expect(refused.status).toBe(401);
  });
});
