import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { VARIANTS, type VariantName } from "../../src/config/variants";
import { laneName } from "../../src/domain/releases/release-controls";
import { createLicense, device } from "../helpers";
import { releaseSite } from "../release-tree";

// spec: "{installer} | the installer file name that the manifest names; it is read from beside the
// manifest". Vendors often give every version's installer the same name (AlphaSetup.exe), each in
// its own release folder: a download by that name is the installer of the manifest the
// installation was served, never a newer release's that shares the name.

for (const variant of ["alpha", "beta", "gamma"] as VariantName[]) {
  describe(`an installer name shared by several releases of a lane, ${variant}`, () => {
    const v = VARIANTS[variant];
    const lane = laneName(v.products[0] ?? null, "stable", "win-x64");
    const prefix = `/updates/${lane}`;
    let s: Awaited<ReturnType<typeof releaseSite>>;
    let older: ReturnType<typeof s.tree.add>;
    let newer: ReturnType<typeof s.tree.add>;

    beforeEach(async () => {
      s = await releaseSite(variant);
      older = s.tree.add({ version: "1.0.0", released: "2026-10-01T00:00:00+00:00", installer: "AlphaSetup.exe" });
      newer = s.tree.add({ version: "1.1.0", released: "2026-11-01T00:00:00+00:00", installer: "AlphaSetup.exe" });
      await s.holder.rescan();
    });
    afterEach(() => s.close());

    const activated = async (extra: Parameters<typeof createLicense>[1] = {}) => {
      const { key } = await createLicense(s.site, { channels: ["stable"], seats: 5, ...extra });
      const res = await s.site.request("POST", "/licenses/activate", { body: { key, device: device(variant) } });
      return ((await res.json()) as { token: string }).token;
    };
    const manifestVersion = async (token: string) =>
      (JSON.parse(await (await s.site.request("GET", `${prefix}/${v.manifestFile}`, { token })).text()) as { version: string }).version;
    const download = async (token: string, query = "") => {
      const res = await s.site.request("GET", `${prefix}/AlphaSetup.exe${query}`, { token });
      return { status: res.status, bytes: Buffer.from(await res.arrayBuffer()) };
    };

    test("the installer of the release served: the newest, or the older one once the newest is withdrawn", async () => {
      const token = await activated();
      expect(older.installerBytes).not.toEqual(newer.installerBytes);
      expect(await manifestVersion(token)).toBe("1.1.0");
      expect(await download(token)).toEqual({ status: 200, bytes: Buffer.from(newer.installerBytes) });

      await s.site.composed.services.selection.controls.apply("withdraw", lane, "1.1.0", s.holder.current);
      expect(await manifestVersion(token)).toBe("1.0.0");
      expect(await download(token)).toEqual({ status: 200, bytes: Buffer.from(older.installerBytes) });
    });

    test("a licence whose maintenance window ended between them gets the older release's installer, not 403", async () => {
      const token = await activated({ updatesUntil: "2026-10-15T00:00:00Z" });
      expect(await manifestVersion(token)).toBe("1.0.0");
      expect(await download(token)).toEqual({ status: 200, bytes: Buffer.from(older.installerBytes) });
      // What it may not install is still refused by version, naming the window.
      const refused = await s.site.request("GET", `${prefix}/AlphaSetup.exe?version=1.1.0`, { token });
      expect(refused.status).toBe(403);
      expect(((await refused.json()) as { error: string }).error).toBe("updates_window_ended");
    });

    test("?version= names one of them (the address of an older release from GET /releases); a version that has none is 404", async () => {
      const token = await activated();
      expect(await download(token, "?version=1.0.0")).toEqual({ status: 200, bytes: Buffer.from(older.installerBytes) });
      expect(await download(token, "?version=1.1.0")).toEqual({ status: 200, bytes: Buffer.from(newer.installerBytes) });
      const none = await s.site.request("GET", `${prefix}/AlphaSetup.exe?version=0.9.0`, { token });
      expect(none.status).toBe(404);
      expect(((await none.json()) as { error: string }).error).toBe("not_found");
    });
  });
}
