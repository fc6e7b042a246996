/**
 * Install outcome reports in a real Chromium against the compiled executable: two installations
 * report through the API (one installed, one failed), the failure share crosses the rollout's
 * autoHalt, the release halts by itself, the failed installation falls back to the previous
 * release, and the console shows the reports per release and day and says why it halted.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { device } from "../helpers";
import { follow, launchBrowser, openContext, press, screenshot, SKIP_BROWSER, startSite, type Site } from "./harness";

setDefaultTimeout(60_000);

const LANE = "stable/win-x64";
let site: Site;
let browser: Browser;
let page: Page;
let problems: string[];
let admin: string;

const api = (path: string, init: { method?: string; body?: unknown; token?: string } = {}) =>
  fetch(`${site.url}/api/v1${path}`, {
    method: init.method ?? "GET",
    headers: { "content-type": "application/json", ...(init.token ? { authorization: `Bearer ${init.token}` } : {}) },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });

const served = async (token: string) => ((await (await api(`/updates/${LANE}/gamma-update.json`, { token })).json()) as { version: string }).version;

beforeAll(async () => {
  if (SKIP_BROWSER) return;
  site = await startSite("gamma", {
    prepare: (tree) => {
      tree.add({ version: "1.0.0", released: "2026-11-01T00:00:00+00:00" });
      tree.add({
        version: "2.0.0",
        released: "2026-11-20T00:00:00+00:00",
        fields: { rollout: { percent: 100, autoHalt: { failureRate: 0.5, minReports: 2, window: "6h" } } },
      });
    },
  });
  admin = site.adminToken("ops", ["admin"]);
  browser = await launchBrowser();
  ({ page, problems } = await openContext(browser, "desktop", site.url));
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await site?.stop();
});

describe.skipIf(SKIP_BROWSER)("install reports in the console", () => {
  test("two installations report; the failure halts the rollout by itself; the console shows the reports and why", async () => {
    const created = await api("/admin/licenses", {
      method: "POST",
      token: admin,
      body: { licensee: "Ada", organization: "Engines", plan: "pro", planTitle: "Pro", seats: 5, channels: ["stable"] },
    });
    const { key } = (await created.json()) as { key: string };
    const tokens: string[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await api("/licenses/activate", { method: "POST", body: { key, device: device("gamma", { version: "1.0.0" }) } });
      tokens.push(((await res.json()) as { token: string }).token);
    }
    for (const t of tokens) expect(await served(t)).toBe("2.0.0");
    expect((await api("/updates/report", { method: "POST", token: tokens[0], body: { from: "1.0.0", to: "2.0.0", outcome: "installed" } })).status).toBe(200);
    expect(
      (await api("/updates/report", { method: "POST", token: tokens[1], body: { from: "1.0.0", to: "2.0.0", outcome: "failed", code: "E1603" } })).status,
    ).toBe(200);

    // The reports are written within 5 s; the halt follows the write.
    let rule: string | null = null;
    for (let i = 0; i < 60 && rule === null; i++) {
      const overview = (await (await api("/admin/releases", { token: admin })).json()) as {
        lanes: { releases: { version: string; haltRule: string | null }[] }[];
      };
      rule = overview.lanes[0]!.releases.find((r) => r.version === "2.0.0")!.haltRule;
      if (rule === null) await Bun.sleep(250);
    }
    expect(rule).toBe("autoHalt: 1 of 2 installations reporting within 6h failed (50%; the rule: at least 50% of at least 2)");
    // The installation that runs it keeps it; the one whose install failed falls back.
    expect(await served(tokens[0]!)).toBe("2.0.0");
    expect(await served(tokens[1]!)).toBe("1.0.0");

    await page.goto(`${site.url}/console/`);
    await page.getByLabel("Admin token").fill(admin);
    await press(page, "Sign in with the token");
    await page.waitForURL((u) => !u.pathname.endsWith("/sign-in"));
    const total = page.locator(`#install-reports tr.release-total[data-version="2.0.0"]`);
    await expect(total.locator("td").nth(2).textContent()).resolves.toBe("1");
    await expect(total.locator("td").nth(3).textContent()).resolves.toBe("1");
    const spec = JSON.parse((await page.locator('script[type="application/json"]#chart-reports-0').textContent())!);
    expect(spec.series.map((s: { values: number[] }) => s.values.reduce((a, b) => a + b, 0))).toEqual([1, 1]);
    await screenshot(page, "dashboard-install-reports-1280");

    await follow(page, "Releases", true);
    const row = page.locator('tr[data-release="2.0.0"]');
    await expect(row.locator("td.install-reports").textContent()).resolves.toBe("1 installed, 1 failed, 0 rolled back (50% failed)");
    await expect(row.locator(".halt-rule").textContent()).resolves.toBe(`(${rule})`);
    await expect(row.textContent()).resolves.toContain("halted by itself: served only to installations running it");
    await screenshot(page, "releases-halted-by-itself-1280");
    // A person resumes it: the rule goes with the halt.
    await press(page, "resume 2.0.0");
    await expect(row.locator(".halt-rule").count()).resolves.toBe(0);
    expect(await served(tokens[1]!)).toBe("2.0.0");
    expect(problems).toEqual([]);
  });
});
