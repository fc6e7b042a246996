import { afterAll, describe, expect, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { compactVerify, importSPKI } from "jose";
import { generateKeyFiles } from "../../src/domain/keys";
import { signManifest } from "../../src/domain/releases/signature";
import { VARIANTS } from "../../src/config/variants";
import { createPrivateKey } from "node:crypto";
import { tempDir } from "../helpers";
import { runCli } from "../processes";

const dir = tempDir("keyturn-make-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const signing = join(dir, "signing");
generateKeyFiles(signing, "beta-release-2026-11");
generateKeyFiles(signing, "gamma-release-2026-11");
const KEY = join(signing, "beta-release-2026-11.pem");
const hex = (algorithm: string, bytes: Uint8Array) => createHash(algorithm).update(bytes).digest("hex");

function build(name: string, bytes: Uint8Array): string {
  const path = join(dir, "build", name);
  mkdirSync(join(dir, "build"), { recursive: true });
  writeFileSync(path, bytes);
  return path;
}

describe("keyturn release make", () => {
  test("writes the folder a vendor would write by hand, byte for byte, signed; release check passes it", async () => {
    const installer = randomBytes(200_000);
    const blockmap = randomBytes(700);
    const tauriSig = Buffer.from("dW50cnVzdGVkIGNvbW1lbnQ6IHNpZ25hdHVyZSBmcm9tIHRhdXJpIHNlY3JldCBrZXkK");
    const releases = join(dir, "made");
    const made = await runCli([
      "release",
      "make",
      "--installer",
      build("beta-3.1.0-win-x64.exe", installer),
      "--version",
      "3.1.0",
      "--product",
      "beta-studio",
      "--channel",
      "preview",
      "--released",
      "2026-11-20T09:30:00+00:00",
      "--notes",
      'Faster "export".\nFixes a crash.',
      "--minimum-version",
      "2.0.0",
      "--critical",
      "--rollout",
      "7d",
      "--blockmap",
      build("anything.blockmap", blockmap),
      "--tauri-signature",
      build("beta-3.1.0-win-x64.exe.sig", tauriSig),
      "--releases",
      releases,
      "--key",
      KEY,
    ]);
    expect(made.stderr).toBe("");
    expect(made.code).toBe(0);
    const folder = join(releases, "beta-studio/preview/win-x64/3.1.0");
    expect(made.stdout).toContain(`made ${folder}, signed with beta-release-2026-11`);
    expect(readdirSync(folder).sort()).toEqual([
      "beta-3.1.0-win-x64.exe",
      "beta-3.1.0-win-x64.exe.blockmap",
      "beta-3.1.0-win-x64.exe.sig",
      "beta-update.json",
      "beta-update.json.sig",
    ]);
    // Nothing else was left beside it (the hidden work folder was renamed into place).
    expect(readdirSync(join(releases, "beta-studio/preview/win-x64"))).toEqual(["3.1.0"]);

    // The manifest as a vendor writes it by hand (docs/releases.md, "The manifest"): the same bytes.
    const byHand = `{
  "product": "beta-studio",
  "channel": "preview",
  "platform": "win-x64",
  "version": "3.1.0",
  "released": "2026-11-20T09:30:00+00:00",
  "installer": "beta-3.1.0-win-x64.exe",
  "size": 200000,
  "sha256": "${hex("sha256", installer)}",
  "sha512": "${hex("sha512", installer)}",
  "notes": "Faster \\"export\\".\\nFixes a crash.",
  "minimumVersion": "2.0.0",
  "critical": true,
  "rollout": {
    "days": 7
  },
  "feeds": {
    "electron": {
      "blockmap": {
        "file": "beta-3.1.0-win-x64.exe.blockmap",
        "size": 700,
        "sha256": "${hex("sha256", blockmap)}"
      }
    },
    "tauri": {
      "signature": {
        "file": "beta-3.1.0-win-x64.exe.sig",
        "size": ${tauriSig.length},
        "sha256": "${hex("sha256", tauriSig)}"
      }
    }
  }
}
`;
    const manifest = readFileSync(join(folder, "beta-update.json"));
    expect(manifest.toString()).toBe(byHand);
    expect(readFileSync(join(folder, "beta-3.1.0-win-x64.exe")).equals(installer)).toBe(true);
    expect(readFileSync(join(folder, "beta-3.1.0-win-x64.exe.blockmap")).equals(blockmap)).toBe(true);

    // Its signature: what release sign writes for the hand-written bytes (ES256 signatures are
    // randomised, so each is checked with jose against the key rather than compared).
    const sig = readFileSync(join(folder, "beta-update.json.sig"), "utf8");
    const handSig = signManifest(Buffer.from(byHand), { kid: "beta-release-2026-11", privateKey: createPrivateKey(readFileSync(KEY, "utf8")) }, VARIANTS.beta);
    const key = await importSPKI(readFileSync(join(signing, "beta-release-2026-11.pub.pem"), "utf8"), "ES256");
    for (const s of [sig, handSig]) {
      const [header, , signature] = s.split(".");
      const { protectedHeader } = await compactVerify(`${header}.${manifest.toString("base64url")}.${signature}`, key, { algorithms: ["ES256"] });
      expect(protectedHeader).toEqual({ alg: "ES256", kid: "beta-release-2026-11", typ: "be-rel+jws" });
      expect(s.split(".")[0]).toBe(handSig.split(".")[0]!);
    }

    const checked = await runCli(["release", "check", "--releases", releases, "--keys", signing, "--variant", "beta"]);
    expect(checked.stdout).toContain("live     beta-studio/preview/win-x64/3.1.0  (3.1.0)");
    expect(checked.stdout).toContain("1 live, 0 with problems");
    expect(checked.code).toBe(0);
  });

  test("release check verifies the stated sha512: an installer changed after make is named", async () => {
    const releases = join(dir, "sha512");
    const made = await runCli([
      "release",
      "make",
      "--variant",
      "gamma",
      "--installer",
      build("gamma-4.0.0-win-x64.exe", randomBytes(5000)),
      "--version",
      "4.0.0",
      "--releases",
      releases,
      "--key",
      join(signing, "gamma-release-2026-11.pem"),
    ]);
    expect(made.code).toBe(0);
    const folder = join(releases, "stable/win-x64/4.0.0");
    // A manifest saying another sha512, re-signed: sha256 and size still agree, sha512 does not.
    const path = join(folder, "gamma-update.json");
    const doc = JSON.parse(readFileSync(path, "utf8"));
    doc.sha512 = "0".repeat(128);
    writeFileSync(path, `${JSON.stringify(doc, null, 2)}\n`);
    const resign = await runCli(["release", "sign", "--key", join(signing, "gamma-release-2026-11.pem"), path]);
    expect(resign.stderr).toContain("installer gamma-4.0.0-win-x64.exe does not match the manifest's sha512");
    expect(resign.code).toBe(1);
  });

  test("refusals name the field, and leave nothing behind", async () => {
    const releases = join(dir, "refused");
    const installer = build("beta-1.0.0-win-x64.exe", randomBytes(1000));
    const base = ["release", "make", "--installer", installer, "--releases", releases, "--key", KEY];
    const cases: [string[], string][] = [
      [["--version", "1.0.0"], "--product must be one of beta, beta-studio"],
      [["--version", "1 0", "--product", "beta"], "manifest version must be a version like 1.4.2"],
      [["--version", "1.0.0", "--product", "gamma"], "--product must be one of beta, beta-studio"],
      [["--version", "1.0.0", "--product", "beta", "--channel", "nightly"], "--channel must be one of stable, preview"],
      [["--version", "1.0.0", "--product", "beta", "--channel", "../../outside"], "--channel must be one of stable, preview"],
      [["--version", "1.0.0", "--product", "beta", "--platform", "mac-x64"], "--platform must be one of win-x64"],
      [["--version", "1.0.0", "--product", "beta", "--rollout", "150%"], "manifest rollout percent must be a number from 0 to 100"],
      [["--version", "1.0.0", "--product", "beta", "--released", "yesterday"], "manifest released must be an ISO 8601 time"],
      [["--version", "1.0.0", "--product", "beta", "--sparkle-signature", "short"], "manifest feeds.sparkle.edSignature must be"],
      [["--version", "1.0.0", "--product", "beta", "--velopack-package-id", "Beta"], "manifest feeds.velopack needs the installer to be the -full.nupkg"],
      [["--version", "1.0.0", "--product", "beta", "--folder", "../up"], "folder must be a plain name"],
    ];
    for (const [extra, reason] of cases) {
      const r = await runCli([...base, ...extra]);
      expect({ extra, err: r.stderr.split("\n")[0] }).toEqual({ extra, err: expect.stringContaining(reason) });
      expect(r.code).toBe(1);
    }
    expect(existsSync(join(releases, "beta/stable/win-x64")) ? readdirSync(join(releases, "beta/stable/win-x64")) : []).toEqual([]);
    // No directory of a wrong lane either, in the tree or beside it.
    expect(existsSync(releases) ? readdirSync(releases).filter((d) => d !== "beta") : []).toEqual([]);
    expect(existsSync(join(releases, "beta")) ? readdirSync(join(releases, "beta")).filter((d) => d !== "stable") : []).toEqual([]);
    expect(existsSync(join(dir, "outside"))).toBe(false);

    expect((await runCli([...base, "--version", "1.0.0", "--product", "beta"])).code).toBe(0);
    const again = await runCli([...base, "--version", "1.0.0", "--product", "beta"]);
    expect(again.stderr).toContain("exists already; a release folder is never rewritten");
    expect(again.code).toBe(1);

    const wrongKey = await runCli([...base, "--version", "1.0.1", "--product", "beta", "--variant", "gamma"]);
    expect(wrongKey.stderr).toContain("--key beta-release-2026-11 is not a gamma key");
    expect(wrongKey.code).toBe(2);
  });
});
