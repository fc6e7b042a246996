import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { deviceHash, KeyturnClient, KeyturnClientError, loadDeviceId, type Device, type Release } from "../../src/client";
import { tempDir } from "../helpers";
import { buildAll, ISSUER, resignWithOtherKey, startKitSite, type KitSite } from "./kit-site";

const INSTALLER_SIZE = 6 * 1024 * 1024;
const dir = tempDir("keyturn-kit-e2e-");
let built: { exe: string; kit: string };
let site: KitSite;
const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

let stable: { bytes: Uint8Array };
let preview: { bytes: Uint8Array; manifestPath: string };

beforeAll(async () => {
  built = await buildAll(dir);
  site = await startKitSite(built.exe, "alpha");
  const t = site.tree;
  stable = {
    bytes: t.add({
      product: "alpha",
      channel: "stable",
      version: "1.1.0",
      installerBytes: randomBytes(INSTALLER_SIZE),
      fields: { minimumVersion: "1.0.5", notes: "Faster start." },
    }).installerBytes,
  };
  const p = t.add({ product: "alpha", channel: "preview", version: "2.0.0-beta.1", installerBytes: randomBytes(INSTALLER_SIZE) });
  preview = { bytes: p.installerBytes, manifestPath: p.manifestPath };
  // alpha-cli/stable: the manifest changed after signing.
  const tampered = t.add({ product: "alpha-cli", channel: "stable", version: "3.0.0" });
  writeFileSync(tampered.manifestPath, tampered.manifestBytes.toString().replace('"3.0.0"', '"3.0.1"'));
  // alpha-cli/preview: signed by another key under the compiled-in kid.
  resignWithOtherKey(t, t.add({ product: "alpha-cli", channel: "preview", version: "3.1.0-rc.1" }).manifestPath);
  await site.rescan();
}, 120_000);

afterAll(async () => {
  await site?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function waitFor(cond: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await Bun.sleep(50);
  }
}

function kit(product = "alpha", channel = "stable", baseUrl = site.url): KeyturnClient {
  return new KeyturnClient({ variant: "alpha", issuer: ISSUER, baseUrl, licenseKeys: site.licenseKeys, releaseKeys: site.releaseKeys, product, channel });
}

async function newDevice(product = "alpha"): Promise<Device> {
  let stored: string | null = null;
  const id = await loadDeviceId({ read: () => stored, write: (v) => void (stored = v) });
  return { hash: await deviceHash("alpha", id), name: "Kit PC", platform: "win-x64", version: "1.0.0", product };
}

async function refusalOf(p: Promise<unknown>): Promise<KeyturnClientError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof KeyturnClientError) return e;
    throw e;
  }
  throw new Error("expected a refusal");
}

describe("client kit against the compiled executable", () => {
  test("activate, verify offline, check for update, download with a cut and a resume, refresh, deactivate, token refused", async () => {
    const client = kit();
    const device = await newDevice();
    const key = await site.createLicense();
    const activation = await client.activate(key, device);
    expect(activation.entitlement.channels).toEqual(["stable", "preview"]);
    expect(activation.entitlement.licenseExpires).toBeNull(); // a license with no end; the token's own end is `expires`
    const offline = await client.verifyToken(activation.token, { deviceHash: device.hash });
    expect(offline.claims.iss).toBe(ISSUER);
    expect(offline.claims.sub).toBe(activation.entitlement.id);
    // The same token on another device is refused offline.
    expect((await refusalOf(client.verifyToken(activation.token, { deviceHash: (await newDevice()).hash }))).reason).toBe("device");

    const update = await client.checkForUpdate("1.0.0", { token: activation.token });
    expect(update).toMatchObject({ available: true, required: true, critical: false });
    expect(update.release!).toMatchObject({
      version: "1.1.0",
      size: INSTALLER_SIZE,
      sha256: sha(stable.bytes),
      notes: "Faster start.",
      signedBy: site.tree.kid,
    });
    expect((await client.checkForUpdate("1.1.0", { token: activation.token })).available).toBe(false);

    const file = join(dir, "stable-installer.exe");
    const controller = new AbortController();
    const cut = await refusalOf(
      client.downloadInstaller(update.release!, file, {
        token: activation.token,
        signal: controller.signal,
        onProgress: (p) => p.received >= INSTALLER_SIZE / 3 && controller.abort(),
      }),
    );
    expect(cut.code).toBe("aborted");
    const partial = statSync(`${file}.part`).size;
    expect(partial).toBeGreaterThan(0);
    expect(partial).toBeLessThan(INSTALLER_SIZE);
    expect(readFileSync(`${file}.part.etag`, "utf8")).toMatch(/^".+"$/);

    const progress: number[] = [];
    const done = await client.downloadInstaller(update.release!, file, { token: activation.token, onProgress: (p) => progress.push(p.received) });
    expect(done).toMatchObject({ status: 206, resumedFrom: partial, restarted: false, sha256: sha(stable.bytes) });
    expect(progress[0]!).toBeGreaterThan(partial);
    expect(sha(readFileSync(file))).toBe(sha(stable.bytes));
    expect(existsSync(`${file}.part`) || existsSync(`${file}.part.etag`)).toBe(false);

    const refreshed = await client.refresh(activation.token, device);
    expect(refreshed.token).not.toBe(activation.token);
    expect(refreshed.verified.claims.sub).toBe(activation.entitlement.id);
    expect((await client.current(refreshed.token)).entitlement.id).toBe(activation.entitlement.id);
    await client.deactivate(refreshed.token);
    const refused = await refusalOf(client.current(refreshed.token));
    expect(refused.code).toBe("entitlement_revoked");
    expect(refused.ref).toMatch(/^ref_/); // the site's audit line, as docs/clients.md says the error carries
    expect(refused.status).toBe(401);
    expect((await refusalOf(client.checkForUpdate("1.0.0", { token: activation.token }))).code).toBe("entitlement_revoked");
  }, 60_000);

  test("a release replaced between the two halves of a download starts over (If-Range), and a swapped installer is refused and deleted", async () => {
    const client = kit("alpha", "preview");
    const device = await newDevice();
    const { token } = await client.activate(await site.createLicense(), device);
    const first = (await client.checkForUpdate("1.0.0", { token })).release!;
    expect(first.sha256).toBe(sha(preview.bytes));
    const file = join(dir, "preview-installer.exe");
    const controller = new AbortController();
    expect(
      (
        await refusalOf(
          client.downloadInstaller(first, file, {
            token,
            signal: controller.signal,
            onProgress: (p) => p.received >= INSTALLER_SIZE / 2 && controller.abort(),
          }),
        )
      ).code,
    ).toBe("aborted");
    const partial = statSync(`${file}.part`).size;
    expect(partial).toBeGreaterThan(0);

    // The vendor rebuilds the release in place: same version, folder and installer name, other bytes.
    const rebuilt = site.tree.add({ product: "alpha", channel: "preview", version: "2.0.0-beta.1", installerBytes: randomBytes(INSTALLER_SIZE) });
    await site.rescan();
    let second: Release | null = null;
    await waitFor(async () => {
      second = (await client.checkForUpdate("1.0.0", { token })).release;
      return second!.sha256 === sha(rebuilt.installerBytes);
    });

    const events: { resumedFrom: number; restarted: boolean }[] = [];
    const done = await client.downloadInstaller(second!, file, { token, onProgress: (p) => events.push(p) });
    // If-Range named the old ETag: the site sent the whole new file, not the rest of it spliced onto the old bytes.
    expect(done).toMatchObject({ status: 200, restarted: true, resumedFrom: 0 });
    expect(events[0]).toMatchObject({ resumedFrom: 0, restarted: true });
    expect(sha(readFileSync(file))).toBe(sha(rebuilt.installerBytes));

    // The installer swapped on the site (same size, the manifest unchanged): keyturn itself never
    // serves bytes that do not hash to the manifest's sha256, so the kit is told to try again later.
    const swappedBytes = randomBytes(INSTALLER_SIZE);
    writeFileSync(rebuilt.installerPath, swappedBytes);
    const swappedFile = join(dir, "swapped.exe");
    expect((await refusalOf(client.downloadInstaller(second!, swappedFile, { token }))).code).toBe("unavailable");
    // A hostile copy that is not keyturn serves them anyway: the kit checks the SHA-256 and deletes what it received.
    const hostile = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response(swappedBytes, { headers: { etag: '"hostile"' } }) });
    try {
      const viaHostile = kit("alpha", "preview", `http://127.0.0.1:${hostile.port}`);
      const swapped = await refusalOf(viaHostile.downloadInstaller(second!, swappedFile, { token }));
      expect(swapped.code).toBe("sha256_mismatch");
    } finally {
      hostile.stop(true);
    }
    expect(existsSync(swappedFile) || existsSync(`${swappedFile}.part`) || existsSync(`${swappedFile}.part.etag`)).toBe(false);
  }, 60_000);

  test("a manifest changed after signing, and one signed by another key, are refused", async () => {
    const { token } = await kit("alpha-cli").activate(await site.createLicense(), await newDevice("alpha-cli"));
    const tampered = await refusalOf(kit("alpha-cli", "stable").checkForUpdate("1.0.0", { token }));
    expect(tampered).toMatchObject({ code: "signature_invalid", reason: "signature" });
    const otherKey = await refusalOf(kit("alpha-cli", "preview").checkForUpdate("1.0.0", { token }));
    expect(otherKey).toMatchObject({ code: "signature_invalid", reason: "signature" });
    // A program that does not hold the release key at all refuses the good manifest too (by kid).
    const noKeys = new KeyturnClient({ variant: "alpha", issuer: ISSUER, baseUrl: site.url, licenseKeys: site.licenseKeys, releaseKeys: {}, product: "alpha" });
    expect(await refusalOf(noKeys.checkForUpdate("1.0.0", { token }))).toMatchObject({ code: "signature_invalid", reason: "kid" });
    // A program built against another site (iss) refuses that site's tokens.
    const other = new KeyturnClient({
      variant: "alpha",
      issuer: "https://other.example.com",
      baseUrl: site.url,
      licenseKeys: site.licenseKeys,
      product: "alpha",
    });
    expect(await refusalOf(other.activate(await site.createLicense(), await newDevice()))).toMatchObject({ code: "entitlement_invalid", reason: "iss" });
  }, 60_000);

  test("offline activation: the request code through `keyturn activation offline` gives an answer code the kit accepts", async () => {
    const client = kit();
    const device = await newDevice();
    const code = client.offlineRequestCode({ device });
    // As docs/clients.md has it, the key added on the online side (the code was made without it).
    const text = await site.answerOffline(code, await site.createLicense());
    const wrapped = text.replace(/(.{64})/g, "$1\n");
    const verified = await client.acceptAnswerCode(wrapped, { deviceHash: device.hash });
    expect(verified.claims.dev).toBe(device.hash);
    expect((await client.current(verified.token)).entitlement.id).toBe(verified.claims.sub);
    expect((await refusalOf(client.acceptAnswerCode(text, { deviceHash: (await newDevice()).hash }))).reason).toBe("device");
  });

  test("the built kit imports only Node built-ins (jose is bundled), uses no Bun API, and ships declarations", () => {
    const js = readFileSync(built.kit, "utf8");
    const imports = [...js.matchAll(/^import .* from "([^"]+)";$/gm)].map((m) => m[1]!);
    expect(imports.length).toBeGreaterThan(0);
    expect(imports.filter((name) => !name.startsWith("node:"))).toEqual([]);
    expect(js).not.toMatch(/\bBun\./);
    expect(readFileSync(join(built.kit, "..", "index.d.ts"), "utf8")).toContain("KeyturnClient");
  });

  test("the same flow runs under Node on the built kit", async () => {
    const downloads = tempDir("keyturn-kit-node-");
    try {
      const p = Bun.spawn(["node", join(import.meta.dir, "flow.mjs")], {
        stdout: "pipe",
        stderr: "pipe",
        env: {
          PATH: process.env.PATH ?? "/usr/bin:/bin",
          KIT: built.kit,
          VARIANT: "alpha",
          PRODUCT: "alpha",
          ISSUER,
          SITE_URL: site.url,
          KEY: await site.createLicense(),
          LICENSE_KEYS: JSON.stringify(site.licenseKeys),
          RELEASE_KEYS: JSON.stringify(site.releaseKeys),
          DIR: downloads,
        },
      });
      const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
      expect(stderr).toBe("");
      expect(code).toBe(0);
      const out = JSON.parse(stdout);
      expect(out.runtime).toMatch(/^node v2\d\./);
      expect(out).toMatchObject({
        idStored: true,
        hashLength: 43,
        activatedDev: true,
        cut: "aborted",
        update: { available: true, version: "1.1.0", required: true, critical: false },
        resume: { status: 206, restarted: false },
        sha256: sha(stable.bytes),
        partLeft: false,
        refreshedNewToken: true,
        afterDeactivate: "entitlement_revoked",
      });
      expect(out.offlineSub).toBe(out.current);
      expect(out.partAfterCut).toBeGreaterThan(0);
      expect(out.resume.resumedFrom).toBe(out.partAfterCut);
    } finally {
      rmSync(downloads, { recursive: true, force: true });
    }
  }, 60_000);

  // Last: it moves alpha/stable on, which the tests above expect at 1.1.0.
  test("releases that share an installer's name: the kit downloads the release it checked, though the lane moved on since", async () => {
    const client = kit();
    const { token } = await client.activate(await site.createLicense(), await newDevice());
    const checked = site.tree.add({ product: "alpha", channel: "stable", version: "1.2.0", installer: "AlphaSetup.exe" });
    await site.rescan();
    let release: Release | null = null;
    await waitFor(async () => (release = (await client.checkForUpdate("1.0.0", { token })).release)?.version === "1.2.0");
    const next = site.tree.add({ product: "alpha", channel: "stable", version: "1.3.0", installer: "AlphaSetup.exe" });
    await site.rescan();
    await waitFor(async () => (await client.checkForUpdate("1.0.0", { token })).release?.version === "1.3.0");
    expect(sha(next.installerBytes)).not.toBe(sha(checked.installerBytes));

    const file = join(dir, "AlphaSetup.exe");
    const done = await client.downloadInstaller(release!, file, { token });
    expect(done.status).toBe(200);
    expect(sha(readFileSync(file))).toBe(sha(checked.installerBytes));
  }, 60_000);
});
