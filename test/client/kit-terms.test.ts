import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { rmSync } from "node:fs";
import { feature, hasFeature, KeyturnClient, KeyturnClientError, parseManifest, updatesCover, updatesUntil } from "../../src/client";
import { CLI_CALLER } from "../../src/domain/admin/deps";
import { createLicense as adminCreate } from "../../src/domain/admin/licenses";
import { BASE_URL, device, tempDir } from "../helpers";
import { releaseSite, type WrittenRelease } from "../release-tree";
import { spkiOf } from "./kit-site";

// The kit against a site with a plan (docs/licence-models.md): a perpetual licence with features,
// read offline from the verified token; the update check offers the newest release within the
// window; a download of a newer installer is refused with the site's code and the date.

describe("the kit and a licence's terms", () => {
  let s: Awaited<ReturnType<typeof releaseSite>>;
  let client: KeyturnClient;
  const written: Record<string, WrittenRelease> = {};
  const dir = tempDir("keyturn-kit-terms-");

  beforeAll(async () => {
    s = await releaseSite(
      "alpha",
      {},
      { plans: { perpetual: { title: "Perpetual", seats: 2, channels: ["stable"], features: ["export-pdf", "max-projects=50"], updatesFor: "365d" } } },
    );
    written["1.0.0"] = s.tree.add({ version: "1.0.0", released: "2026-09-01T00:00:00+00:00" });
    written["1.1.0"] = s.tree.add({ version: "1.1.0", released: "2026-10-01T00:00:00+00:00" });
    await s.holder.rescan();
    await s.holder.verified();
    const app = s.site.app;
    client = new KeyturnClient({
      variant: "alpha",
      issuer: BASE_URL,
      licenseKeys: { [s.tree.v.defaultLicenseKid]: spkiOf(join(s.tree.keysDir, `${s.tree.v.defaultLicenseKid}.pub.pem`)) },
      releaseKeys: { [s.tree.kid]: spkiOf(join(s.tree.keysDir, `${s.tree.kid}.pub.pem`)) },
      product: "alpha",
      now: () => s.site.clock(),
      fetch: (input, init) => app.handle(new Request(input, init)),
    });
  });
  afterAll(async () => {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const activate = async (fields: Record<string, unknown>) => {
    const { key } = await adminCreate(s.site.composed.services.admin, CLI_CALLER, { licensee: "Ada", plan: "perpetual", ...fields } as never);
    const d = device("alpha");
    return client.activate(key, d as never);
  };

  test("the plan's window and features, read offline from the verified token and from the entitlement", async () => {
    const a = await activate({});
    expect(hasFeature(a.verified, "export-pdf")).toBe(true);
    expect(feature(a.verified, "max-projects")).toBe("50");
    expect(feature(a.verified, "ai-credits")).toBeNull();
    expect(hasFeature(a.entitlement, "export-pdf")).toBe(true);
    expect(updatesUntil(a.verified)).toBe(Math.floor((s.site.clock() + 365 * 86_400_000) / 1000) * 1000);
    expect(updatesUntil(a.entitlement)).toBe(updatesUntil(a.verified));
    expect(a.entitlement.planTitle).toBe("Perpetual");
    const check = await client.checkForUpdate("0.9.0", { token: a.token });
    expect(check.release?.version).toBe("1.1.0");
  });

  test("a window that ended before 1.1.0: the check offers 1.0.0; downloading 1.1.0 is updates_window_ended naming the date", async () => {
    const a = await activate({ updatesUntil: "2026-09-15T00:00:00Z" });
    const check = await client.checkForUpdate("0.9.0", { token: a.token });
    expect(check.release?.version).toBe("1.0.0");
    expect(updatesCover(a.verified, check.release!.released)).toBe(true);
    const newer = parseManifest(
      new Uint8Array(written["1.1.0"]!.manifestBytes),
      client.variant,
      { product: "alpha", channel: "stable", platform: "win-x64" },
      s.tree.kid,
    );
    expect(updatesCover(a.verified, newer.released)).toBe(false);
    let error: KeyturnClientError | undefined;
    await client.downloadInstaller(newer, join(dir, "newer.exe"), { token: a.token }).catch((e) => (error = e));
    expect(error?.code).toBe("updates_window_ended");
    expect(error?.status).toBe(403);
    expect(error?.message).toContain("2026-09-15");
    const older = await client.downloadInstaller(check.release!, join(dir, "older.exe"), { token: a.token });
    expect(older.size).toBe(written["1.0.0"]!.installerBytes.length);
  });
});
