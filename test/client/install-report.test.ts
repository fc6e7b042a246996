import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { installReportBody, KeyturnClient, KeyturnClientError, type InstallReport } from "../../src/client";
import { decode } from "../../src/domain/decode";
import { KeyturnError } from "../../src/domain/errors";
import { InstallReportModel } from "../../src/domain/releases/install-reports";
import { VECTORS_DIR } from "../../scripts/client-vectors";
import { BASE_URL, createLicense, device } from "../helpers";
import { releaseSite } from "../release-tree";

// The kit's install report (POST /updates/report) against docs/clients/vectors/install-reports.json,
// the site's own model against the same vectors, and the kit's call against a site.

interface Vector {
  name: string;
  report: InstallReport;
  verdict: "sent" | "refused";
  body?: unknown;
  field?: string;
}
const { reports } = JSON.parse(readFileSync(join(VECTORS_DIR, "install-reports.json"), "utf8")) as { reports: Vector[] };

test("the vectors hold reports sent and refused for each field", () => {
  expect(reports.filter((r) => r.verdict === "sent").length).toBeGreaterThanOrEqual(4);
  expect(new Set(reports.flatMap((r) => (r.field ? [r.field] : [])))).toEqual(new Set(["from", "to", "outcome", "code"]));
});

describe("each vector", () => {
  test.each(reports.map((r) => [r.name, r] as const))("%s: the kit and the site agree with it", (_name, v) => {
    let kit: unknown;
    try {
      kit = installReportBody(v.report);
    } catch (e) {
      expect(e).toBeInstanceOf(KeyturnClientError);
      expect((e as KeyturnClientError).code).toBe("invalid_request");
      kit = { refused: (e as KeyturnClientError).reason };
    }
    expect(kit).toEqual(v.verdict === "sent" ? v.body : { refused: v.field });
    let site: unknown;
    try {
      site = decode(InstallReportModel, v.report);
    } catch (e) {
      expect((e as KeyturnError).code).toBe("invalid_request");
      expect((e as KeyturnError).message).toContain(v.field!);
      site = { refused: v.field };
    }
    expect(site).toEqual(v.verdict === "sent" ? v.body : { refused: v.field });
  });
});

describe("the kit reports to a site", () => {
  let s: Awaited<ReturnType<typeof releaseSite>>;
  let token: string;
  let kit: KeyturnClient;
  beforeAll(async () => {
    s = await releaseSite("beta");
    s.tree.add({ version: "1.0.0", released: "2026-11-01T00:00:00+00:00" });
    s.tree.add({ version: "1.1.0", released: "2026-11-20T00:00:00+00:00" });
    await s.holder.rescan();
    const { key } = await createLicense(s.site, { channels: ["stable"] });
    const res = await s.site.request("POST", "/licenses/activate", { body: { key, device: device("beta") } });
    token = ((await res.json()) as { token: string }).token;
    kit = new KeyturnClient({
      variant: "beta",
      issuer: BASE_URL,
      licenseKeys: {},
      product: "beta",
      fetch: (input, init) => s.site.app.handle(new Request(input, init)),
    });
  });
  afterAll(() => s.close());

  test("a report is counted for the release; one naming no release is the site's not_found; a bad one is never sent", async () => {
    expect(await kit.reportInstall(token, { from: "1.0.0", to: "1.1.0", outcome: "failed", code: "E1603" })).toEqual({
      ok: true,
      release: { lane: "beta/stable/win-x64", version: "1.1.0" },
    } as never);
    await s.site.composed.services.installReports.flush();
    expect(await s.site.composed.store.releaseHealth({ lane: "beta/stable/win-x64", version: "1.1.0" }, 0)).toEqual({ reports: 1, failed: 1 });
    const refused = await kit.reportInstall(token, { from: "1.0.0", to: "7.0.0", outcome: "installed" }).catch((e) => e as KeyturnClientError);
    expect(refused).toMatchObject({ code: "not_found", status: 404 });
    const local = await kit.reportInstall(token, { from: "1.0.0", to: "1.1.0", outcome: "exploded" as never }).catch((e) => e as KeyturnClientError);
    expect(local).toMatchObject({ code: "invalid_request", reason: "outcome" });
  });
});
