import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { VARIANTS, type VariantName } from "../../src/config/variants";
import { laneName } from "../../src/domain/releases/release-controls";
import { parseRollout } from "../../src/domain/releases/rollout";
import { createLicense, device } from "../helpers";
import { releaseSite } from "../release-tree";

// design.md "Release pipeline": a rollout's `targets` admit named licences or plans first, whatever
// the share; everyone else is admitted by the share (the bucket computed here with node:crypto).

const TWO64 = 1n << 64n;
const uInt = (dev: string, lane: string, version: string) => BigInt("0x" + createHash("sha256").update(`${dev}:${lane}:${version}`).digest("hex").slice(0, 16));

for (const variant of ["beta", "gamma"] as VariantName[]) {
  describe(`rollout targets, ${variant}`, () => {
    const v = VARIANTS[variant];
    const product = v.products[0] ?? null;
    const lane = laneName(product, "stable", "win-x64");
    let s: Awaited<ReturnType<typeof releaseSite>>;

    beforeEach(async () => {
      s = await releaseSite(variant);
    });
    afterEach(() => s.close());

    const installations = async (plan: string, n: number) => {
      const { key, license } = await createLicense(s.site, { channels: ["stable"], seats: 100, plan });
      const out: { token: string; dev: string; license: string }[] = [];
      for (let i = 0; i < n; i++) {
        const d = device(variant);
        const res = await s.site.request("POST", "/licenses/activate", { body: { key, device: d } });
        out.push({ token: ((await res.json()) as { token: string }).token, dev: d.hash, license: license.id });
      }
      return out;
    };
    const served = async (token: string) => {
      const res = await s.site.request("GET", `/updates/${lane}/${v.manifestFile}`, { token });
      return (JSON.parse(await res.text()) as { version: string }).version;
    };

    test("at 0 %, only the named licence and plan get the release; /releases agrees", async () => {
      const beta = await installations("basic", 3);
      const staff = await installations("staff-preview", 3);
      const others = await installations("basic", 6);
      s.tree.add({ version: "1.0.0", released: "2026-11-01T00:00:00+00:00" });
      s.tree.add({
        version: "2.0.0",
        released: "2026-11-20T00:00:00+00:00",
        fields: { rollout: { percent: 0, targets: { licenses: [beta[0]!.license], plans: ["staff-preview"] } } },
      });
      await s.holder.rescan();
      for (const i of [...beta, ...staff]) expect(await served(i.token)).toBe("2.0.0");
      for (const i of others) expect(await served(i.token)).toBe("1.0.0");
      const listed = (await (await s.site.request("GET", "/releases", { token: others[0]!.token })).json()) as { releases: { version: string }[] };
      expect(listed.releases.map((r) => r.version)).toEqual(["1.0.0"]);
    });

    test("combined with a percentage: the targeted plan first, everyone else by its bucket", async () => {
      const pro = await installations("pro", 8);
      const basic = await installations("basic", 16);
      s.tree.add({ version: "1.0.0", released: "2026-11-01T00:00:00+00:00" });
      s.tree.add({ version: "2.0.0", released: "2026-11-20T00:00:00+00:00", fields: { rollout: { percent: 50, targets: { plans: ["pro"] } } } });
      await s.holder.rescan();
      for (const i of pro) expect(await served(i.token)).toBe("2.0.0");
      let admitted = 0;
      for (const i of basic) {
        const inside = uInt(i.dev, lane, "2.0.0") < TWO64 / 2n;
        admitted += inside ? 1 : 0;
        expect(await served(i.token)).toBe(inside ? "2.0.0" : "1.0.0");
      }
      expect(admitted).toBeGreaterThan(0);
      expect(admitted).toBeLessThan(basic.length);
    });
  });
}

describe("a manifest's rollout targets and autoHalt", () => {
  test("are read with percent or days", () => {
    expect(parseRollout({ days: 3, targets: { plans: ["pro", "pro"] }, autoHalt: { failureRate: 0.1, minReports: 20, window: "6h" } })).toEqual({
      days: 3,
      targets: { licenses: [], plans: ["pro"] },
      autoHalt: { failureRate: 0.1, minReports: 20, window: "6h" },
    });
  });
  for (const [name, value, message] of [
    ["targets alone", { targets: { plans: ["pro"] } }, "exactly one of percent or days"],
    ["empty targets", { percent: 5, targets: {} }, "at least one licence or plan"],
    ["a target with a control character", { percent: 5, targets: { licenses: ["lic_\u0007"] } }, "targets.licenses must be a list"],
    ["an unknown target field", { percent: 5, targets: { groups: ["a"] } }, 'unknown field "groups"'],
    ["a failure rate above 1", { percent: 5, autoHalt: { failureRate: 2, minReports: 1, window: "1h" } }, "failureRate"],
    ["no minimum", { percent: 5, autoHalt: { failureRate: 0.5, window: "1h" } }, "minReports"],
    ["a window too short", { percent: 5, autoHalt: { failureRate: 0.5, minReports: 3, window: "1m" } }, "window must be a duration"],
    ["a window without a unit", { percent: 5, autoHalt: { failureRate: 0.5, minReports: 3, window: "60" } }, "window must be a duration"],
  ] as const)
    test(`${name} is refused`, () => {
      expect(() => parseRollout(value)).toThrow(message);
    });
});
