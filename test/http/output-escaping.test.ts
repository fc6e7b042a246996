import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "../../src/config/log";
import { escapeControl, escapeJsonControl } from "../../src/config/text";
import { createLicense, device, tempDir, testSite, type TestSite } from "../helpers";
import { runCli } from "../processes";
import { ReleaseTree } from "../release-tree";

// Issue 13, item 5: "device.name/device.version with control sequences are printed raw by
// `activation list`, folder names by `release check`, and text logs carry them. Escape every C0/C1
// control character in every human-readable output (JSON output stays JSON)."

/** Clears the screen, sets the window title, a C1 CSI, a forged log line and a bidi override. */
const HOSTILE = "evil\x1b[2J\x1b]0;owned\x07\x9b31m\nFAKE LINE\r\u202etxt.exe\x7f";
/** Any character a terminal acts on, or that starts a new line. */
const RAW_CONTROL = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Lines of a command's output: none holds a raw control character, and the hostile text shows escaped. */
function expectEscaped(output: string, shown = escapeControl(HOSTILE)) {
  for (const line of output.split("\n")) expect(line).not.toMatch(RAW_CONTROL);
  expect(output).toContain(shown);
  expect(output).not.toContain("\nFAKE LINE");
}

describe("escapeControl", () => {
  test("every C0, DEL and C1 character becomes a visible escape; printable text is untouched", () => {
    for (let c = 0; c <= 0x9f; c++) {
      const ch = String.fromCharCode(c);
      const escaped = escapeControl(`a${ch}b`);
      if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) {
        expect(escaped).not.toMatch(RAW_CONTROL);
        expect(escaped).toBe(c <= 0x7f ? `a\\x${c.toString(16).padStart(2, "0")}b` : `a\\u00${c.toString(16)}b`);
      } else expect(escaped).toBe(`a${ch}b`);
    }
    expect(escapeControl("\x1b[31m")).toBe("\\x1b[31m");
    expect(escapeControl("\u009b")).toBe("\\u009b");
    expect(escapeControl("Zoë's PC — Grüße C:\\x")).toBe("Zoë's PC — Grüße C:\\x");
    expect(escapeControl("a\u202eb\u2028c")).toBe("a\\u202eb\\u2028c");
  });

  test("escapeJsonControl keeps JSON parsing to the same value, with no raw control character left", () => {
    const value = { name: HOSTILE, nested: [HOSTILE] };
    const json = escapeJsonControl(JSON.stringify(value, null, 2));
    expect(JSON.parse(json)).toEqual(value);
    for (const line of json.split("\n")) expect(line).not.toMatch(RAW_CONTROL);
  });
});

describe("logs", () => {
  test("text format: message, field names and values escaped, one line per event", () => {
    const lines: string[] = [];
    const log = createLogger("text", "debug", (l) => lines.push(l));
    log.warn(`release folder skipped ${HOSTILE}`, { folder: HOSTILE, plain: "x\x1by", [HOSTILE]: 1, obj: { n: HOSTILE } });
    expect(lines.length).toBe(1);
    expect(lines[0]).not.toMatch(RAW_CONTROL);
    expect(lines[0]).toContain(escapeControl(HOSTILE));
    expect(lines[0]).toContain("plain=x\\x1by");
  });

  test("json format stays JSON, parses to the same fields, with no raw C1 or DEL", () => {
    const lines: string[] = [];
    createLogger("json", "debug", (l) => lines.push(l)).info("request", { name: HOSTILE });
    expect(lines[0]).not.toMatch(RAW_CONTROL);
    expect(JSON.parse(lines[0]!).name).toBe(HOSTILE);
  });

  test("serve's text log of a skipped release folder with a hostile name", async () => {
    const tree = new ReleaseTree("gamma");
    cleanups.push(() => rmSync(tree.dir, { recursive: true, force: true }));
    mkdirSync(join(tree.root, "stable", "win-x64", HOSTILE), { recursive: true });
    const lines: string[] = [];
    const site = await testSite("gamma", { settings: { releases: tree.root, keys: tree.keysDir }, log: createLogger("text", "info", (l) => lines.push(l)) });
    cleanups.push(() => site.close());
    await site.composed.services.releases.ready();
    const skipped = lines.filter((l) => l.includes("release folder skipped"));
    expect(skipped.length).toBe(1);
    // A value with spaces is written as a JSON string, whose escapes are JSON's.
    expectEscaped(lines.join("\n"), escapeJsonControl(JSON.stringify(HOSTILE)).slice(1, -1));
  });
});

describe("commands", () => {
  let site: TestSite;
  let key: string;
  const data = () => join(site.dir, "data");
  const admin = (...args: string[]) => runCli([...args, "--variant", "gamma", "--data", data()]);

  test("activation list and deactivate: a hostile device name and version", async () => {
    site = await testSite("gamma");
    cleanups.push(() => site.close());
    ({ key } = await createLicense(site));
    const r = await site.request("POST", "/licenses/activate", { body: { key, device: device("gamma", { name: HOSTILE, version: `1.0${HOSTILE}` }) } });
    expect(r.status).toBe(200);
    const { entitlement } = (await r.json()) as { entitlement: { id: string } };

    const list = await admin("activation", "list", "--license", key);
    expect(list.code).toBe(0);
    expectEscaped(list.stdout);
    expect(list.stdout).toContain(`1.0${escapeControl(HOSTILE)}`);
    // --json stays JSON and keeps the name as it was sent.
    const json = await admin("activation", "list", "--license", key, "--json");
    expect(JSON.parse(json.stdout).activations[0].name).toBe(HOSTILE);
    for (const line of json.stdout.split("\n")) expect(line).not.toMatch(RAW_CONTROL);

    const off = await admin("activation", "deactivate", entitlement.id);
    expect(off.code).toBe(0);
    expectEscaped(off.stdout);
  });

  test("license list and show: a hostile licensee (a staff license takes it from the ID token's name)", async () => {
    // The admin services refuse control characters in names; a staff license takes its name from
    // the issuer's ID token, so the records can still hold one.
    const hostile = await site.composed.store.upsertStaffLicense({
      id: "staff:hostile",
      kind: "staff",
      keyHash: null,
      licensee: HOSTILE,
      organization: `Org${HOSTILE}`,
      plan: "staff",
      planTitle: HOSTILE,
      channels: ["stable"],
      seats: 5,
      issued: site.clock(),
      expires: null,
      revoked: null,
    });
    for (const args of [
      ["license", "list"],
      ["license", "show", hostile.id],
    ]) {
      const r = await admin(...args);
      expect(r.code).toBe(0);
      expectEscaped(r.stdout);
    }
  });

  test("audit: a line whose fields hold control characters", async () => {
    await site.composed.store.writeAudit({
      ref: "ref_hostile",
      time: site.clock(),
      address: HOSTILE,
      action: "activate",
      activationId: `act_${HOSTILE}`,
      licenseId: null,
      outcome: "refused",
      error: "license_unknown",
    });
    const r = await admin("audit");
    expect(r.code).toBe(0);
    expectEscaped(r.stdout);
  });

  test("errors on stderr: an argument with control characters is echoed escaped", async () => {
    const r = await admin("license", "show", HOSTILE);
    expect(r.code).toBe(1);
    expect(r.stderr).not.toMatch(RAW_CONTROL);
    const unknown = await runCli([`bogus${HOSTILE}`]);
    expect(unknown.code).toBe(2);
    expectEscaped(unknown.stderr);
  });

  test("backup: a target file named with control characters", async () => {
    const r = await admin("backup", "--to", join(site.dir, `copy${HOSTILE}.sqlite`));
    expect(r.code).toBe(0);
    expectEscaped(r.stdout);
  });

  test("keys generate: a keys directory named with control characters", async () => {
    const dir = tempDir();
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const r = await runCli(["keys", "generate", "--variant", "gamma", "--keys", join(dir, HOSTILE)]);
    expect(r.code).toBe(0);
    expect(readdirSync(join(dir, HOSTILE)).length).toBe(2);
    expectEscaped(r.stdout);
  });

  test("release check: a hostile release folder name", async () => {
    const tree = new ReleaseTree("gamma");
    cleanups.push(() => rmSync(tree.dir, { recursive: true, force: true }));
    tree.add({ version: "1.0.0" });
    mkdirSync(join(tree.root, "stable", "win-x64", HOSTILE), { recursive: true });
    const r = await runCli(["release", "check", "--variant", "gamma", "--releases", tree.root, "--keys", tree.keysDir]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain("PROBLEM  stable/win-x64/" + escapeControl(HOSTILE));
    expectEscaped(r.stdout);
  });
});
