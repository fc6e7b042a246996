import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { VARIANTS, type VariantName } from "../../src/config/variants";
import { generateKeyFiles } from "../../src/domain/keys";
import { executable, untilListening } from "../executable";
import { freePort } from "../processes";
import { ReleaseTree } from "../release-tree";

/** Debian's Chromium (.ci/run installs it), found on PATH; KEYTURN_CHROMIUM names another executable. */
export const CHROMIUM: string | null = process.env.KEYTURN_CHROMIUM || Bun.which("chromium") || null;

/**
 * Outside CI, a machine without Chromium skips the browser tests, with one line saying how to run
 * them (the README's `npm test` must pass on a fresh clone); with CI=true they are required, and fail.
 */
export const SKIP_BROWSER = CHROMIUM === null && process.env.CI !== "true";
export const HOW_TO_RUN_BROWSER_TESTS =
  "keyturn: the browser tests (test/browser) are skipped: Chromium is not on PATH. Install Debian's chromium (apt-get install chromium) or set KEYTURN_CHROMIUM=/path/to/chromium; CI=true makes them required.";
if (SKIP_BROWSER) console.warn(HOW_TO_RUN_BROWSER_TESTS);

function requireChromium(): string {
  if (CHROMIUM === null) throw new Error(`Chromium is required with CI=true and is not on PATH: apt-get install chromium (or set KEYTURN_CHROMIUM).`);
  return CHROMIUM;
}
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-quic",
  "--no-first-run",
  "--disable-component-update",
  "--disable-sync",
];

/**
 * Where the tests write their screenshots: docs/console (committed, docs/console.md shows them) when
 * KEYTURN_UPDATE_SCREENSHOTS=1, else a temporary folder, so a test run leaves the work tree as it was.
 */
export const SHOTS =
  process.env.KEYTURN_UPDATE_SCREENSHOTS === "1" ? join(import.meta.dir, "..", "..", "docs", "console") : join(tmpdir(), "keyturn-console-screenshots");
export const WIDTHS = { phone: { width: 375, height: 812 }, desktop: { width: 1280, height: 900 } } as const;

export interface Site {
  readonly url: string;
  readonly exe: string;
  readonly dir: string;
  readonly tree: ReleaseTree;
  /** Runs a keyturn command on this site's records (e.g. admin-token create). */
  cli(args: string[]): string;
  adminToken(name: string, scopes: string[]): string;
  stop(): Promise<void>;
}

/**
 * The compiled executable serving a release tree on a free loopback port. Its public origin
 * (--base-url) is the address the browser opens: `http://127.0.0.1:PORT`, or `baseUrl` when a TLS
 * proxy stands in front of it (proxy.ts).
 */
export async function startSite(variant: VariantName, o: { args?: string[]; prepare?: (tree: ReleaseTree) => void; baseUrl?: string } = {}): Promise<Site> {
  requireChromium();
  const exe = await executable();
  const tree = new ReleaseTree(variant);
  o.prepare?.(tree);
  generateKeyFiles(tree.keysDir, VARIANTS[variant].defaultLicenseKid);
  const dir = join(tree.dir, "site");
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const common = ["--variant", variant, "--base-url", o.baseUrl ?? `http://127.0.0.1:${port}`, "--data", join(dir, "data")];
  const proc = Bun.spawn([exe, "serve", ...common, "--keys", tree.keysDir, "--releases", tree.root, "--port", String(port), ...(o.args ?? [])], {
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe",
  });
  const reader = proc.stderr.getReader();
  const { url } = await untilListening(reader);
  void (async () => {
    while (!(await reader.read()).done);
  })();
  const cli = (args: string[]) => execFileSync(exe, [...args.slice(0, 2), ...common, ...args.slice(2)], { encoding: "utf8" });
  return {
    url,
    exe,
    dir,
    tree,
    cli,
    adminToken: (name, scopes) => JSON.parse(cli(["admin-token", "create", "--name", name, "--scopes", scopes.join(","), "--json"])).secret,
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
      tree.remove();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A host name of another site for the hostile tests: the browser resolves it to the loopback address. */
export const ATTACKER_HOST = "evil.test";

/** One Chromium per test file (a fresh profile each launch); pages are reused within it. */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: requireChromium(), args: [...CHROMIUM_ARGS, `--host-resolver-rules=MAP ${ATTACKER_HOST} 127.0.0.1`] });
}

/** A context at the given width that records CSP violations, script errors and requests that leave the site. */
export async function openContext(
  browser: Browser,
  width: keyof typeof WIDTHS,
  origin: string,
): Promise<{ context: BrowserContext; page: Page; problems: string[]; offsite: string[] }> {
  const context = await browser.newContext({ viewport: WIDTHS[width] });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin });
  const page = await context.newPage();
  const problems: string[] = [];
  // Requests to anywhere but the site (and the hostile tests' other site): a closed network must do.
  const offsite: string[] = [];
  page.on("request", (r) => {
    const url = new URL(r.url());
    if (url.origin !== origin && url.hostname !== ATTACKER_HOST && url.protocol !== "data:") offsite.push(r.url());
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && /Content Security Policy|Refused to/.test(m.text())) problems.push(`console error: ${m.text()}`);
  });
  return { context, page, problems, offsite };
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/**
 * Follows a link and waits until its page has loaded. A bare click returns once the navigation has
 * started, so what is read next could still come from the page being left.
 */
export async function follow(p: Page, name: string | RegExp, exact = false): Promise<void> {
  const link = p.getByRole("link", { name, exact });
  const target = new URL((await link.getAttribute("href")) ?? "", p.url());
  await Promise.all([p.waitForURL((u) => u.pathname === target.pathname && u.search === target.search), link.click()]);
}

/** Presses a form's button and waits for the page it leads to. */
export async function press(p: Page, name: string | RegExp): Promise<void> {
  await Promise.all([p.waitForEvent("load"), p.getByRole("button", { name }).click()]);
}
