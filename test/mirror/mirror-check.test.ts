import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { VARIANTS } from "../../src/config/variants";
import { generateKeyFiles } from "../../src/domain/keys";
import { tempDir } from "../helpers";
import { makePrivateCa } from "../private-ca";
import { FeedServer, MIRROR_TOKEN, Vendor } from "./vendor";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");

/** Run asynchronously: the feed server answers from this very process. */
async function mirrorCheck(feedUrl: string, keys: string, releases: string, env: Record<string, string> = {}) {
  const run = Bun.spawn([process.execPath, MAIN, "mirror", "check", "--variant", "alpha", "--mirror-of", feedUrl, "--keys", keys, "--releases", releases], {
    env: { ...process.env, KEYTURN_MIRROR_TOKEN: MIRROR_TOKEN, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited]);
  return { code, out, err };
}

describe("keyturn mirror check", () => {
  const feed = new FeedServer();
  let vendor: Vendor;

  beforeAll(async () => {
    feed.start();
    vendor = await new Vendor("alpha", feed.url).init();
    vendor.tree.add({ version: "3.1.0" });
    feed.meta = await vendor.meta();
    feed.deactivate("act_one", Date.now() + 86_400_000);
  });
  afterAll(() => {
    feed.stop();
    vendor.remove();
  });

  test("a right copy, the vendor's public keys and a reachable feed: exit 0, each part said ok", async () => {
    const r = await mirrorCheck(feed.url, vendor.mirrorKeys, vendor.tree.root);
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    expect(r.out).toContain("ok       keys: license public keys alpha-license-2026-10");
    expect(r.out).toContain("ok       keys: release public keys alpha-release-2026-11");
    expect(r.out).toContain(": 1 live release, 0 with problems");
    expect(r.out).toContain("ok       feed: ");
    expect(r.out).toContain("(records e0, 1 item on a first page of 1)");
    expect(r.out).not.toContain(MIRROR_TOKEN);
    expect(r.out.trim().split("\n").at(-1)).toBe("the mirror is set up right");
  });

  test("a private key, a key the vendor publishes missing, a damaged copy and a refused token: exit 1, each named, control characters escaped", async () => {
    const dir = tempDir("keyturn-mirror-check-");
    const keys = join(dir, "keys");
    mkdirSync(keys);
    // The release key only: the vendor's license key is missing, and a private key sits there instead.
    copyFileSync(join(vendor.mirrorKeys, "alpha-release-2026-11.pub.pem"), join(keys, "alpha-release-2026-11.pub.pem"));
    generateKeyFiles(keys, "alpha-license-2027-01");
    const releases = join(dir, "releases");
    cpSync(vendor.tree.root, releases, { recursive: true });
    const lane = join(releases, "alpha", "stable", "win-x64");
    const bad = join(lane, "3.2.0\u001b[2J");
    mkdirSync(bad);
    writeFileSync(join(bad, VARIANTS.alpha.manifestFile), "{}");
    feed.mode = "unauthorized";
    try {
      const r = await mirrorCheck(feed.url, keys, releases);
      expect(r.code).toBe(1);
      expect(r.out).toContain("PROBLEM  keys: alpha-license-2027-01.pem in");
      // A license key the vendor publishes is learnt from its feed: a note, not a problem.
      expect(r.out).toContain("note     keys: the vendor publishes alpha-license-2026-10, not in");
      expect(r.out).toContain("PROBLEM  copy: alpha/stable/win-x64/3.2.0\\x1b[2J");
      expect(r.out).not.toContain("\u001b");
      expect(r.out).toContain("PROBLEM  feed: the vendor refused the mirror token (admin_token_invalid)");
      expect(r.out.trim().split("\n").at(-1)).toMatch(/^\d+ problems$/);
    } finally {
      feed.mode = "ok";
    }
  });

  test("a vendor that cannot be reached is a problem; a missing --mirror-token is a usage error (exit 2)", async () => {
    const r = await mirrorCheck("http://127.0.0.1:9", vendor.mirrorKeys, vendor.tree.root);
    expect(r.code).toBe(1);
    expect(r.out).toContain("PROBLEM  feed: the vendor cannot be reached");
    const noToken = Bun.spawnSync([process.execPath, MAIN, "mirror", "check", "--variant", "alpha", "--mirror-of", feed.url], {
      env: { ...process.env, KEYTURN_MIRROR_TOKEN: "" },
      stderr: "pipe",
    });
    expect(noToken.exitCode).toBe(2);
    expect(noToken.stderr.toString()).toContain("--mirror-token: required with --mirror-of");
  });

  test("a vendor whose certificate a private CA signed: refused as unverifiable, trusted once NODE_EXTRA_CA_CERTS names the CA file", async () => {
    const dir = tempDir("keyturn-private-ca-");
    const pki = makePrivateCa(dir);
    // The vendor's site behind HTTPS with that certificate (forwarding to the feed server).
    const https = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: { cert: readFileSync(pki.cert, "utf8"), key: readFileSync(pki.key, "utf8") },
      fetch: (r) => {
        const url = new URL(r.url);
        return fetch(`${feed.url}${url.pathname}${url.search}`, { headers: r.headers });
      },
    });
    try {
      const vendorUrl = `https://127.0.0.1:${https.port}`;
      const untrusted = await mirrorCheck(vendorUrl, vendor.mirrorKeys, vendor.tree.root, { NODE_EXTRA_CA_CERTS: "" });
      expect(untrusted.code).toBe(1);
      expect(untrusted.out).toContain("PROBLEM  feed: the vendor cannot be reached: unable to verify the first certificate");
      expect(untrusted.out).toContain("note     keys: the vendor's /meta cannot be read");
      const trusted = await mirrorCheck(vendorUrl, vendor.mirrorKeys, vendor.tree.root, { NODE_EXTRA_CA_CERTS: pki.ca });
      expect(trusted.err).toBe("");
      expect(trusted.out).not.toContain("/meta cannot be read");
      expect(trusted.out).toContain("ok       feed: ");
      expect(trusted.code).toBe(0);
    } finally {
      https.stop(true);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
