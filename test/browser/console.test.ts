/**
 * The console in a real Chromium against the compiled executable: sign in with a token, create a
 * licence and copy its key, see an installation activated through the API, deactivate it, scopes,
 * sign out, and the hostile cases (XSS, CSRF, SameSite, clickjacking). Screenshots at 375 and 1280 px.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { offlineRequestCode } from "../../src/client/offline";
import { device } from "../helpers";
import { ATTACKER_HOST, follow, launchBrowser, openContext, press, screenshot, startSite, WIDTHS, SKIP_BROWSER, type Site } from "./harness";

const XSS_NAME = `<script>window.__xss = 1</script>Ada <img src=x onerror="window.__xss = 2">`;
const XSS_ORG = `<b id="bold-org">Evil</b> & Co`;
const XSS_DEVICE = `<img src=x onerror="window.__xss = 3">Lab PC`;

setDefaultTimeout(60_000);

let site: Site;
let browser: Browser;
let attacker: ReturnType<typeof Bun.serve>;
let adminToken: string;
let page: Page;
let problems: string[];
let offsite: string[];
let licenseUrl = "";
let licenseKey = "";

const api = (path: string, init: RequestInit & { token?: string } = {}) =>
  fetch(`${site.url}/api/v1${path}`, {
    ...init,
    headers: { "content-type": "application/json", ...(init.token ? { authorization: `Bearer ${init.token}` } : {}), ...init.headers },
  });

async function signIn(p: Page, token: string): Promise<void> {
  await p.goto(`${site.url}/console/`);
  await p.getByLabel("Admin token").fill(token);
  await press(p, "Sign in with the token");
  await p.waitForURL((u) => !u.pathname.endsWith("/sign-in"));
}

/** The session's CSRF token as the page's forms carry it. */
const csrfOf = (p: Page) => p.locator('input[name="csrf"]').first().inputValue();

beforeAll(async () => {
  if (SKIP_BROWSER) return;
  site = await startSite("alpha", {
    args: ["--webhook-allow-hosts", "127.0.0.1"],
    prepare: (tree) => {
      tree.add({ version: "1.2.0" });
      tree.add({ version: "1.3.0", sign: false }); // skipped: no signature
    },
  });
  adminToken = site.adminToken("ops", ["admin"]);
  browser = await launchBrowser();
  ({ page, problems, offsite } = await openContext(browser, "desktop", site.url));
  // Another site: evil.test (mapped to 127.0.0.1 in the browser) is not the site the console is opened on.
  const consoleUrl = site.url;
  attacker = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      const { pathname: path, searchParams } = new URL(request.url);
      const target = new URL(consoleUrl);
      const body =
        path === "/frame"
          ? `<iframe id="victim" src="${target.origin}/console/licenses" width="800" height="600"></iframe>`
          : `<form id="f" method="post" action="${target.origin}${searchParams.get("to") ?? "/"}"><input name="csrf" value="guess"></form><script>document.getElementById("f").submit()</script>`;
      return new Response(`<!doctype html><html><body>${body}</body></html>`, { headers: { "content-type": "text/html" } });
    },
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  attacker?.stop(true);
  await site?.stop();
});

const attackerUrl = (path: string) => `http://${ATTACKER_HOST}:${attacker.port}${path}`;

describe.skipIf(SKIP_BROWSER)("console", () => {
  test("signs in with an admin token into an HttpOnly, SameSite=Strict session cookie", async () => {
    await page.goto(`${site.url}/console/`);
    expect(new URL(page.url()).pathname).toBe("/console/sign-in");
    await screenshot(page, "sign-in-1280");
    await signIn(page, adminToken);
    await expect(page.locator("h1").textContent()).resolves.toBe("Dashboard");
    const cookies = await page.context().cookies();
    expect(cookies).toHaveLength(1);
    expect(cookies[0]).toMatchObject({ name: "keyturn-console", httpOnly: true, sameSite: "Strict", path: "/" });
    expect(cookies[0]!.value).not.toContain(adminToken);
  });

  test("a wrong token (typed with the keyboard only) is refused with the sign-in page again", async () => {
    const { context, page: p } = await openContext(browser, "desktop", site.url);
    await p.goto(`${site.url}/console/sign-in`);
    // By keyboard alone: Tab reaches the labelled token field, Enter sends the form.
    await p.keyboard.press("Tab");
    expect(await p.evaluate("document.activeElement.name")).toBe("token");
    await p.keyboard.type("kt_admin_wrong");
    // The refusal is read once its page has loaded, not only once its answer arrived.
    const [response] = await Promise.all([p.waitForResponse((r) => r.request().method() === "POST"), p.waitForEvent("load"), p.keyboard.press("Enter")]);
    expect(response.status()).toBe(401);
    await expect(p.getByRole("alert").textContent()).resolves.toContain("unknown, expired or revoked");
    expect(await context.cookies()).toHaveLength(0);
    await context.close();
  });

  test("creates a licence, shows its key once and copies it; hostile names render as text", async () => {
    await follow(page, "Licences");
    await page.getByLabel("Licensee", { exact: true }).fill(XSS_NAME);
    await page.getByLabel("Organisation", { exact: true }).fill(XSS_ORG);
    await page.getByLabel("Seats", { exact: true }).fill("3");
    await press(page, "Create licence");
    await page.waitForSelector("#license-key");
    licenseKey = (await page.locator("#license-key").textContent())!.trim();
    expect(licenseKey).toMatch(/^[0-9A-Z-]{20,}$/);
    await page.getByRole("button", { name: "Copy key" }).click();
    await page.getByRole("button", { name: "Copied" }).waitFor({ timeout: 5000 });
    expect(await page.evaluate("navigator.clipboard.readText()")).toBe(licenseKey);
    await screenshot(page, "license-created-1280");
    await follow(page, /Open the licence of/);
    licenseUrl = page.url();
    await expect(page.locator("#licensee").textContent()).resolves.toBe(XSS_NAME);
    await expect(page.locator("#organization").textContent()).resolves.toBe(XSS_ORG);
    expect(await page.locator("#bold-org").count()).toBe(0);
    expect(await page.evaluate("window.__xss")).toBeUndefined();
  });

  test("an installation activated through the API is on the licence page and in the dashboard chart", async () => {
    const activated = await api("/licenses/activate", {
      method: "POST",
      body: JSON.stringify({ key: licenseKey, device: device("alpha", { name: XSS_DEVICE, version: "2.4.1" }) }),
    });
    expect(activated.status).toBe(200);
    await page.goto(licenseUrl);
    const row = page.locator("#installations tbody tr");
    await expect(row.count()).resolves.toBe(1);
    await expect(row.locator("td").first().textContent()).resolves.toBe(XSS_DEVICE);
    await expect(row.locator("td").nth(2).textContent()).resolves.toBe("2.4.1");
    await expect(page.locator("#seats").textContent()).resolves.toBe("1 / 3");
    expect(await page.evaluate("window.__xss")).toBeUndefined();
    await screenshot(page, "license-1280");

    await follow(page, "Dashboard");
    await page.waitForSelector('.chart[data-ready="true"] canvas');
    const figures = page.locator("table.installations tbody tr", { hasText: "2.4.1" });
    await expect(figures.locator("td").nth(1).textContent({ timeout: 1000 })).resolves.toBe("1");
    // The chart was drawn from the same figures: its data block holds the version and the count.
    const spec = JSON.parse((await page.locator('script[type="application/json"][id^="chart-lane-"]').first().textContent())!);
    expect(spec.labels).toContain("2.4.1");
    expect(spec.series[0].values[spec.labels.indexOf("2.4.1")]).toBe(1);
    await expect(page.locator("#activations-per-day tbody tr td").nth(1).textContent()).resolves.toBe("1");
    await screenshot(page, "dashboard-1280");
    // The same pages on a phone, while the installation is active.
    await page.setViewportSize(WIDTHS.phone);
    await page.reload();
    await page.waitForSelector('.chart[data-ready="true"] canvas');
    await screenshot(page, "dashboard-375");
    await page.goto(licenseUrl);
    await screenshot(page, "license-375");
    await page.setViewportSize(WIDTHS.desktop);
  });

  test("deactivates the installation from the console, audited with the token as actor", async () => {
    await page.goto(licenseUrl);
    await press(page, `Deactivate ${XSS_DEVICE}`);
    // A confirmation first, naming the installation (as text) and its licence; nothing is done yet.
    await expect(page.locator("#confirm-question").textContent()).resolves.toBe(
      `Deactivate "${XSS_DEVICE}" (win-x64, version 2.4.1) of the licence of ${XSS_NAME}?`,
    );
    expect(await page.evaluate("window.__xss")).toBeUndefined();
    await press(page, "Deactivate installation");
    await page.waitForURL(`${licenseUrl}?done=installation-deactivated`);
    await expect(page.getByRole("status").textContent()).resolves.toBe("Installation deactivated: its seat is free.");
    await expect(page.locator("#installations tbody tr td").nth(4).textContent()).resolves.toMatch(/^deactivated /);
    await expect(page.locator("#seats").textContent()).resolves.toBe("0 / 3");
    await follow(page, "Audit trail of this licence");
    const line = page.locator("#audit tbody tr", { hasText: "activation-deactivate" });
    await expect(line.count()).resolves.toBe(1);
    await expect(line.locator("td").nth(3).textContent()).resolves.toMatch(/^tok_[0-9a-z]+ \(ops\)$/);
  });

  test("edits seats and the seat lease, revokes, then reinstates the licence", async () => {
    await page.goto(licenseUrl);
    await page.getByLabel("Seats", { exact: true }).fill("7");
    await page.getByLabel(/^Seat lease/).fill("30d");
    await press(page, "Save changes");
    await page.waitForURL(`${licenseUrl}?done=license-saved`);
    await expect(page.locator("#seats").textContent()).resolves.toBe("0 / 7");
    await expect(page.locator("#seat-lease").textContent()).resolves.toBe("30d");
    await press(page, "Revoke licence");
    // The confirmation names the licence; Cancel goes back with nothing done.
    await expect(page.locator("h1").textContent()).resolves.toBe("Revoke licence?");
    await expect(page.locator("#confirm-question").textContent()).resolves.toStartWith(`Revoke the licence of ${XSS_NAME} (${XSS_ORG}), lic_`);
    await page.getByRole("link", { name: "Cancel" }).click();
    await page.waitForURL(licenseUrl);
    await expect(page.locator("#status").textContent()).resolves.toBe("active");
    await press(page, "Revoke licence");
    await press(page, "Revoke licence");
    await expect(page.locator("#status").textContent()).resolves.toBe("revoked");
    await expect(page.getByRole("status").textContent()).resolves.toBe("Licence revoked.");
    await press(page, "Reinstate licence");
    await expect(page.locator("#status").textContent()).resolves.toBe("active");
  });

  test("support without a shell: an offline answer that says until when, and a key reissued after a confirmation, shown once", async () => {
    await page.goto(licenseUrl);
    await follow(page, "Answer an offline request for this licence");
    await page.getByLabel(/^Request code/).fill(offlineRequestCode({ device: device("alpha", { name: "Cabin PC" }) }));
    await press(page, "Make the answer code");
    const answer = (await page.locator("#answer-code").inputValue()).trim();
    expect((await api("/entitlements/current", { token: answer })).status).toBe(200);
    const exp = JSON.parse(Buffer.from(answer.split(".")[1]!, "base64url").toString()).exp as number;
    await expect(page.locator("#answer-valid-until").textContent()).resolves.toStartWith(
      `This answer code works until ${new Date(exp * 1000).toISOString().slice(0, 16).replace("T", " ")} UTC`,
    );
    await screenshot(page, "console-offline-1280");

    await page.goto(licenseUrl);
    await press(page, "Reissue key");
    await expect(page.locator("#confirm-question").textContent()).resolves.toStartWith(`Give the licence of ${XSS_NAME} (${XSS_ORG}), lic_`);
    await screenshot(page, "confirm-rekey-1280");
    await press(page, "Reissue key");
    const newKey = (await page.locator("#license-key").textContent())!.trim();
    expect(newKey).toMatch(/^[0-9A-Z-]{20,}$/);
    expect(newKey).not.toBe(licenseKey);
    const old = await api("/licenses/activate", { method: "POST", body: JSON.stringify({ key: licenseKey, device: device("alpha") }) });
    expect(((await old.json()) as { error: string }).error).toBe("license_unknown");
    // Shown once: back on the licence's page it is nowhere.
    await follow(page, /Open the licence of/);
    expect(await page.content()).not.toContain(newKey);
    licenseKey = newKey;
  });

  test("with JavaScript off, a destructive button still asks first and then acts", async () => {
    const created = await api("/admin/licenses", {
      method: "POST",
      token: adminToken,
      body: JSON.stringify({ licensee: "No Script", organization: "Plain", plan: "p", planTitle: "P", seats: 1, channels: ["stable"] }),
    });
    const { license } = (await created.json()) as { license: { id: string } };
    const context = await browser.newContext({ viewport: WIDTHS.desktop, javaScriptEnabled: false });
    try {
      const p = await context.newPage();
      await signIn(p, adminToken);
      await p.goto(`${site.url}/console/licenses/${license.id}`);
      await press(p, "Revoke licence");
      await expect(p.locator("#confirm-question").textContent()).resolves.toBe(`Revoke the licence of No Script (Plain), ${license.id}?`);
      await expect(p.locator("#status").count()).resolves.toBe(0);
      await press(p, "Revoke licence");
      await expect(p.locator("#status").textContent()).resolves.toBe("revoked");
      await expect(p.getByRole("status").textContent()).resolves.toBe("Licence revoked.");
    } finally {
      await context.close();
    }
  });

  test("search finds the licence by its key", async () => {
    await page.goto(`${site.url}/console/licenses`);
    await page.getByLabel(/^Search/).fill(licenseKey);
    await press(page, "Search");
    await expect(page.locator("#licenses tbody tr").count()).resolves.toBe(1);
    await page.getByLabel(/^Search/).fill("nobody-matches-this");
    await press(page, "Search");
    await expect(page.locator("#licenses tbody tr").count()).resolves.toBe(0);
  });

  test("releases, audit and webhooks pages render for an admin; releases are halted, resumed, withdrawn and restored; a skipped folder says why", async () => {
    for (const [name, heading] of [
      ["Releases", "Releases"],
      ["Audit trail", "Audit trail"],
      ["Webhooks", "Webhooks"],
      ["Sessions", "Console sessions"],
    ] as const) {
      const link = page.getByRole("link", { name, exact: true });
      const path = await link.getAttribute("href");
      // The heading is read once the browser is on the linked page, never the one it is leaving.
      await Promise.all([page.waitForURL((u) => u.pathname === path), link.click()]);
      await expect(page.locator("h1").textContent()).resolves.toBe(heading);
    }
    await follow(page, "Releases", true);
    await press(page, "halt 1.2.0");
    await expect(page.locator("#confirm-question").textContent()).resolves.toBe("Halt version 1.2.0 of alpha/stable/win-x64?");
    await press(page, "halt 1.2.0");
    await expect(page.getByRole("status").textContent()).resolves.toBe("Release halted.");
    await expect(page.locator("td", { hasText: "halted at" }).count()).resolves.toBe(1);
    await press(page, "resume 1.2.0");
    await expect(page.locator("td", { hasText: "halted at" }).count()).resolves.toBe(0);
    await press(page, "withdraw 1.2.0");
    await press(page, "withdraw 1.2.0");
    await expect(page.locator("td", { hasText: "withdrawn" }).count()).resolves.toBe(1);
    await press(page, "restore 1.2.0");
    await expect(page.locator("td", { hasText: "withdrawn" }).count()).resolves.toBe(0);
    // The unsigned folder is listed with why it was skipped, and counted on the dashboard.
    await expect(page.locator("#skipped tbody tr").count()).resolves.toBe(1);
    await expect(page.locator("#skipped tbody tr td").first().textContent()).resolves.toContain("1.3.0");
    await screenshot(page, "releases-1280");
    await follow(page, "Dashboard");
    await expect(page.locator("#tree-health").textContent()).resolves.toContain("1 folder(s) skipped");
  });

  test("the audit trail filters by error code", async () => {
    await page.goto(`${site.url}/console/audit`);
    await page.getByLabel("Error code").fill("admin_token_invalid");
    await press(page, "Filter");
    const outcomes = await page.locator("#audit tbody tr td:nth-child(3)").allTextContents();
    expect(outcomes.length).toBeGreaterThan(0);
    expect(new Set(outcomes)).toEqual(new Set(["refused: admin_token_invalid"]));
  });

  test("a failed webhook delivery is listed and retried from the console", async () => {
    const answers = [410];
    const receiver = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response(null, { status: answers.shift() ?? 200 }) });
    try {
      const auth = { authorization: `Bearer ${adminToken}` };
      expect(
        (
          await api("/admin/webhooks", {
            method: "POST",
            headers: auth,
            body: JSON.stringify({ url: `http://127.0.0.1:${receiver.port}/hook`, events: ["license.created"] }),
          })
        ).status,
      ).toBe(201);
      expect(
        (
          await api("/admin/licenses", {
            method: "POST",
            headers: auth,
            body: JSON.stringify({ licensee: "Hook", organization: "Hook", plan: "p", planTitle: "P", seats: 1, channels: ["stable"] }),
          })
        ).status,
      ).toBe(201);
      let failed = false;
      for (let i = 0; i < 50 && !failed; i++) {
        const page = (await (await api("/admin/webhook-deliveries", { headers: auth })).json()) as { deliveries: { status: string }[] };
        failed = page.deliveries.some((x) => x.status === "failed");
        if (!failed) await Bun.sleep(100);
      }
      expect(failed).toBe(true);
      await page.goto(`${site.url}/console/webhooks`);
      await expect(page.locator("#webhook-endpoints tbody tr td").nth(2).textContent()).resolves.toStartWith("disabled: the receiver answered 410");
      await expect(page.locator("#deliveries tbody tr td").nth(2).textContent()).resolves.toBe("failed");
      await press(page, "Retry");
      await expect(page.locator("#deliveries tbody tr td").nth(2).textContent()).resolves.toBe("pending");
      await page.goto(`${site.url}/console/audit`);
      await expect(page.locator("#audit tbody tr", { hasText: "webhook-retry" }).locator("td").nth(3).textContent()).resolves.toMatch(
        /^tok_[0-9a-z]+ \(ops\)$/,
      );
    } finally {
      receiver.stop(true);
    }
  });

  test("at 375 px every page fits the screen", async () => {
    const { context, page: phone, problems: phoneProblems } = await openContext(browser, "phone", site.url);
    await signIn(phone, adminToken);
    for (const path of [
      "/console/",
      new URL(licenseUrl).pathname,
      "/console/licenses",
      "/console/audit",
      "/console/releases",
      "/console/webhooks",
      "/console/offline",
      "/console/tokens",
      "/console/sessions",
    ]) {
      await phone.goto(`${site.url}${path}`);
      if (path === "/console/") await phone.waitForSelector('.chart[data-ready="true"] canvas');
      const overflow = await phone.evaluate("document.documentElement.scrollWidth - window.innerWidth");
      expect(overflow).toBeLessThanOrEqual(0);
    }
    expect(phoneProblems).toEqual([]);
    await context.close();
  });

  test("a token without a scope sees no button for it and gets 403 when it tries", async () => {
    const support = site.adminToken("support", ["licenses:read", "stats:read"]);
    const { context, page: p } = await openContext(browser, "desktop", site.url);
    await signIn(p, support);
    await p.goto(licenseUrl);
    expect(await p.getByRole("button", { name: /Revoke|Deactivate|Save changes/ }).count()).toBe(0);
    await p.goto(`${site.url}/console/licenses`);
    expect(await p.getByRole("button", { name: "Create licence" }).count()).toBe(0);
    expect(await p.getByRole("link", { name: "Audit trail" }).count()).toBe(0);
    const csrf = await csrfOf(p);
    const status = await p.evaluate(
      async ([url, token]) => {
        const r = await fetch(`${url}/revoke`, { method: "POST", body: new URLSearchParams({ csrf: token! }) });
        return r.status;
      },
      [licenseUrl, csrf] as const,
    );
    expect(status).toBe(403);
    const audit = await p.goto(`${site.url}/console/audit`);
    expect(audit!.status()).toBe(403);
    await context.close();
    await page.goto(licenseUrl);
    await expect(page.locator("#status").textContent()).resolves.toBe("active");
  });

  test("a cross-site form POST is not signed in (SameSite=Strict) and a forged Origin or missing CSRF token is refused", async () => {
    await page.goto(attackerUrl(`/post?to=${encodeURIComponent(new URL(licenseUrl).pathname + "/revoke")}`));
    await page.waitForURL((u) => u.origin === site.url);
    await expect(page.locator("h1").textContent()).resolves.toBe("Sign in");
    const cookie = (await page.context().cookies())[0]!;
    const post = (headers: Record<string, string>, body: string) =>
      fetch(`${licenseUrl}/revoke`, {
        method: "POST",
        redirect: "manual",
        headers: { cookie: `${cookie.name}=${cookie.value}`, "content-type": "application/x-www-form-urlencoded", ...headers },
        body,
      });
    await page.goto(licenseUrl);
    const csrf = await csrfOf(page);
    expect((await post({ origin: "http://evil.example" }, `csrf=${csrf}`)).status).toBe(400);
    expect((await post({ origin: site.url }, "csrf=guess")).status).toBe(400);
    expect((await post({}, `csrf=${csrf}`)).status).toBe(400);
    await page.reload();
    await expect(page.locator("#status").textContent()).resolves.toBe("active");
    // The same request from this site's page with its token does revoke: the refusals above were the checks.
    expect((await post({ origin: site.url }, `csrf=${csrf}`)).status).toBe(303);
    await page.reload();
    await expect(page.locator("#status").textContent()).resolves.toBe("revoked");
  });

  test("the console cannot be framed by another site (frame-ancestors 'none', X-Frame-Options DENY)", async () => {
    const response = await fetch(`${site.url}/console/sign-in`);
    expect(response.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    const { context, page: p, problems: framing } = await openContext(browser, "desktop", site.url);
    await p.context().addCookies(await page.context().cookies());
    await p.goto(attackerUrl("/frame"));
    await p.waitForTimeout(300);
    const frame = p.frames().find((f) => f !== p.mainFrame());
    const framed = frame ? await frame.evaluate("document.body ? document.body.innerText : ''").catch(() => "") : "";
    expect(framed).not.toContain("Licences");
    expect(framing.join("\n")).toContain("frame-ancestors 'none'");
    await context.close();
  });

  test("signing out revokes the session server-side: its cookie no longer opens a page", async () => {
    await page.goto(`${site.url}/console/`);
    const cookie = (await page.context().cookies())[0]!;
    await press(page, "Sign out");
    await page.waitForURL((u) => u.pathname === "/console/sign-in");
    const replay = await fetch(`${site.url}/console/licenses`, { redirect: "manual", headers: { cookie: `${cookie.name}=${cookie.value}` } });
    expect(replay.status).toBe(303);
    expect(replay.headers.get("location")).toBe("/console/sign-in");
  });

  test("revoking the admin token ends its console sessions", async () => {
    const temp = site.adminToken("temp", ["licenses:read"]);
    const { context, page: p } = await openContext(browser, "desktop", site.url);
    await signIn(p, temp);
    const id = JSON.parse(site.cli(["admin-token", "list", "--json"])).tokens.find((t: { name: string }) => t.name === "temp").id;
    site.cli(["admin-token", "revoke", id]);
    await p.goto(`${site.url}/console/licenses`);
    expect(new URL(p.url()).pathname).toBe("/console/sign-in");
    await context.close();
  });

  test("no page of the console broke its CSP or threw, and none asked anything of another site (a closed network will do)", () => {
    expect(problems).toEqual([]);
    expect(offsite).toEqual([]);
  });
});
