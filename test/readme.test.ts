import { afterAll, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { configurationReference, REFERENCE_PATH } from "../src/config/reference";
import { envName, SETTINGS } from "../src/config/settings";
import { VARIANT_NAMES, VARIANTS } from "../src/config/variants";
import { tempDir } from "./helpers";
import { freePort } from "./processes";

const root = join(import.meta.dir, "..");
const read = (path: string) => readFileSync(join(root, path), "utf8");
const readme = read("README.md");

/** README.md, every Markdown file under docs/, and bench/README.md: the documents whose links are checked. */
function documents(): string[] {
  const found = ["README.md", "bench/README.md"];
  const walk = (dir: string) => {
    for (const name of readdirSync(join(root, dir)).sort()) {
      const path = `${dir}/${name}`;
      if (statSync(join(root, path)).isDirectory()) walk(path);
      else if (name.endsWith(".md")) found.push(path);
    }
  };
  walk("docs");
  return found;
}

/** The text outside fenced code blocks and inline code spans, where Markdown links live. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "");
}

/** GitHub's anchors of a document's headings: lower case, punctuation dropped, spaces as dashes, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of markdown.replace(/^```[\s\S]*?^```/gm, "").split("\n")) {
    const m = /^#{1,6}\s+(.*)$/.exec(line);
    if (!m) continue;
    const base = m[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** The relative links of one document (at `doc`, from the repository root) that lead nowhere. */
function brokenLinks(doc: string, text: string): { broken: string[]; checked: number } {
  const broken: string[] = [];
  let checked = 0;
  for (const m of prose(text).matchAll(/\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const target = m[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
    checked++;
    const [pathPart = "", anchor] = target.split("#", 2);
    const file = pathPart === "" ? join(root, doc) : resolve(root, dirname(doc), decodeURIComponent(pathPart));
    const fromRoot = relative(root, file);
    if (fromRoot.startsWith("..")) broken.push(`${doc}: ${target} leaves the repository`);
    else if (!existsSync(file)) broken.push(`${doc}: ${target} (no ${fromRoot})`);
    else if (anchor !== undefined) {
      const headings = anchors(pathPart === "" ? text : readFileSync(file, "utf8"));
      if (!headings.has(anchor)) broken.push(`${doc}: ${target} (no heading #${anchor} in ${fromRoot})`);
    }
  }
  return { broken, checked };
}

test("every relative link in README.md, docs/ and bench/README.md leads to a file (and heading) that exists", () => {
  const broken: string[] = [];
  let checked = 0;
  for (const doc of documents()) {
    const result = brokenLinks(doc, read(doc));
    broken.push(...result.broken);
    checked += result.checked;
  }
  expect(broken).toEqual([]);
  expect(checked).toBeGreaterThan(10);
});

test("the link check finds a missing file, a missing heading and a link out of the repository", () => {
  const text = [
    "# Here",
    "[ok](docs/scaling.md#moving-from-sqlite-to-postgresql) [self](#here) [web](https://example.com)",
    "[gone](docs/gone.md) [no heading](docs/scaling.md#nowhere) [out](../shared/design.md)",
    "`[in code](docs/gone.md)`",
    "```",
    "[in a block](docs/gone.md)",
    "```",
  ].join("\n");
  const { broken, checked } = brokenLinks("README.md", text);
  expect(checked).toBe(5);
  expect(broken).toEqual([
    "README.md: docs/gone.md (no docs/gone.md)",
    "README.md: docs/scaling.md#nowhere (no heading #nowhere in docs/scaling.md)",
    "README.md: ../shared/design.md leaves the repository",
  ]);
  const headings = anchors("# Scaling out\n\n## Scaling out: measured\n\n```sh\n# not a heading\n```\n## Scaling out\n");
  expect([...headings]).toEqual(["scaling-out", "scaling-out-measured", "scaling-out-1"]);
});

test("README stays at most 300 lines and links to every document in docs/", () => {
  expect(readme.split("\n").length).toBeLessThanOrEqual(300);
  for (const doc of documents().filter((d) => d.startsWith("docs/"))) expect(readme).toContain(`](${doc})`);
  expect(readme).toContain("](docs/clients.md)");
  expect(readme).toContain("](bench/README.md)");
});

test("README's first screen says what each variant is, as src/config/variants.ts has it, and that it cannot change", () => {
  const lines = readme.split("\n");
  const section = lines.findIndex((l) => l.startsWith("## Choose your variant"));
  expect(section).toBeGreaterThan(0);
  expect(section).toBeLessThan(20);
  const text = lines
    .slice(
      section,
      lines.findIndex((l, i) => i > section && l.startsWith("## ")),
    )
    .join("\n");
  expect(text).toContain("cannot change later");
  for (const name of VARIANT_NAMES) {
    const v = VARIANTS[name];
    const row = text.split("\n").find((l) => l.startsWith(`| \`${name}\` |`));
    expect(row, `the row of ${name}`).toBeDefined();
    for (const product of v.products) expect(row).toContain(`\`${product}\``);
    if (v.products.length === 0) expect(row).toContain("no product name");
    // One seat per computer (shared by the programs) or per program on a computer.
    expect(row).toContain(v.installationBy === "device" ? "| one computer" : "| one program on one computer");
    expect(text).toContain(`\`${v.keyPrefix}-\``);
  }
  for (const why of ["typ", "aud", VARIANTS.alpha.defaultLicenseKid, "-device:", VARIANTS.alpha.manifestFile]) expect(text).toContain(why);
});

test("docs/configuration.md is what src/config/reference.ts makes of SETTINGS (run it after changing a setting)", () => {
  const committed = read(REFERENCE_PATH);
  expect(committed).toBe(configurationReference());
  for (const s of SETTINGS) {
    const row = committed.split("\n").find((l) => l.startsWith(`| \`--${s.flag}\` |`));
    expect(row, `docs/configuration.md row for --${s.flag}`).toBeDefined();
    expect(row).toContain(envName(s.flag));
    if (s.default) expect(row).toContain(`\`${s.default}\``);
  }
});

test("README names the two commands, and .ci/run runs the README's test command", () => {
  expect(readme).toContain("npm run demo");
  expect(readme).toContain("npm test");
  const ci = read(".ci/run");
  const pkg = JSON.parse(read("package.json"));
  expect(ci).toContain("bun run test");
  expect(pkg.scripts.test).toContain("bun@1.4.5 test");
  expect(pkg.scripts.demo).toContain("src/main.ts serve --demo");
});

/** The shell blocks of one README section, in order. */
function shellOf(section: string): string {
  const start = readme.indexOf(`## ${section}\n`);
  const end = readme.indexOf("\n## ", start + 1);
  expect(start).toBeGreaterThanOrEqual(0);
  return [...readme.slice(start, end).matchAll(/^```sh\n([\s\S]*?)^```/gm)].map((m) => m[1]!).join("\n");
}

const cleanup: (() => void)[] = [];
afterAll(() => cleanup.forEach((f) => f()));

const tools = ["bash", "curl", "node", "sha256sum"].filter((t) => !Bun.which(t));
if (tools.length > 0) console.warn(`skipping the README tour: ${tools.join(", ")} not found`);

test.skipIf(tools.length > 0)(
  "the README's five-minute tour runs as written against `serve --demo`",
  async () => {
    const data = tempDir("keyturn-tour-");
    const work = tempDir("keyturn-tour-cwd-");
    cleanup.push(() => [data, work].forEach((d) => rmSync(d, { recursive: true, force: true })));
    // A port named before the start, as the tour's 8080 is: the demo's public origin is http://127.0.0.1:PORT.
    const port = await freePort();
    const proc = Bun.spawn([process.execPath, join(root, "src/main.ts"), "serve", "--demo", "--port", String(port), "--data", data, "--log-format", "json"], {
      cwd: root,
      stdout: "ignore",
      stderr: "pipe",
    });
    cleanup.push(() => proc.kill());
    let url = "";
    let log = "";
    for await (const chunk of proc.stderr) {
      log += new TextDecoder().decode(chunk);
      const line = log.split("\n").find((l) => l.includes('"keyturn listening"'));
      if (line) {
        url = JSON.parse(line).url;
        break;
      }
    }
    expect(url).toStartWith("http://127.0.0.1:");
    const licenseFile = join(data, "demo-alpha", "demo-license.txt");
    for (let i = 0; i < 100 && !existsSync(licenseFile); i++) await Bun.sleep(50);
    const key = readFileSync(licenseFile, "utf8").trim();
    const adminToken = readFileSync(join(data, "demo-alpha", "demo-admin-token.txt"), "utf8").trim();

    const release = join(root, "releases.example/alpha/alpha/stable/win-x64/1.1.0/alpha-update.json");
    const manifestBytes = readFileSync(release);
    const etag = `"${createHash("sha256").update(manifestBytes).digest("hex")}"`;
    const tour = shellOf("A five-minute tour");
    // The tour's placeholders: the address, the license and admin token the demo printed, the ETag it showed.
    for (const placeholder of ["http://127.0.0.1:8080", "KEY=AL-…", "ADMIN_TOKEN=kta_…", '"<the ETag above>"']) expect(tour).toContain(placeholder);
    const script = tour
      .replaceAll("http://127.0.0.1:8080", url)
      .replace("KEY=AL-…", `KEY=${key}`)
      .replace("ADMIN_TOKEN=kta_…", `ADMIN_TOKEN=${adminToken}`)
      .replace('"<the ETag above>"', etag);

    const run = Bun.spawnSync(["bash", "-euc", script], { cwd: work, env: { PATH: process.env.PATH ?? "" } });
    const out = run.stdout.toString();
    expect(run.stderr.toString()).toBe("");
    expect(run.exitCode).toBe(0);
    expect(out).toContain('"seats":{"used":1,"total":3}');
    expect(out).toContain(`ETag: ${etag}`);
    // the detached signature (header, two dots, 86 characters of signature; no newline) then the 304
    expect(out).toMatch(/eyJ[A-Za-z0-9_-]+\.\.[A-Za-z0-9_-]{86}304\n/);
    const { sha256 } = JSON.parse(manifestBytes.toString()) as { sha256: string };
    expect(out).toContain(`${sha256}  -`);
    expect(out).toContain('"version":"1.2.0-beta.1"');
    expect(out).toContain('"error":"entitlement_revoked"');
    // the admin API's answer: the demo license, its one seat given back in step 4
    const adminAt = out.lastIndexOf('{"ok":true,"licenses"');
    const admin = JSON.parse(out.slice(adminAt, out.indexOf("\n", adminAt))) as { licenses: { licensee: string; seatsUsed: number }[] };
    expect(admin.licenses).toMatchObject([{ licensee: "Demo User", seatsUsed: 0 }]);
    // step 6: the console's sign-in with the admin token, answered with the dashboard's address
    expect(out).toContain(`\n303 ${url}/console/\n`);
  },
  30_000,
);
