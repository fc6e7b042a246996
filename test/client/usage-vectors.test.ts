/**
 * The kit's calls for metered use and trials (design.md "Licence models": kit calls with test
 * vectors): docs/clients/usage-and-trial-vectors.json's requests are what the kit sends and its
 * answers give what the vectors say; then the same calls against a real site (app.handle).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { KeyturnClient, KeyturnClientError, type Device } from "../../src/client";
import { VARIANTS } from "../../src/config/variants";
import { CLI_CALLER } from "../../src/domain/admin/deps";
import { createLicense, LicenseCreateInput } from "../../src/domain/admin/licenses";
import { decode } from "../../src/domain/decode";
import { BASE_URL, device, testSite, type TestSite } from "../helpers";
import { spkiOf } from "./kit-site";

const DOCS = join(import.meta.dir, "..", "..", "docs", "clients");
interface Case {
  name: string;
  call: "use" | "startTrial";
  args: Record<string, any>;
  request: { method: string; path: string; authorization: string | null; body: unknown };
  answer: { status: number; body: unknown };
  kit: { result?: unknown; error?: string; status?: number };
}
const vectors = JSON.parse(readFileSync(join(DOCS, "usage-and-trial-vectors.json"), "utf8")) as { now: string; cases: Case[] };
const index = JSON.parse(readFileSync(join(DOCS, "vectors", "index.json"), "utf8")) as {
  site: { variant: "alpha"; iss: string };
  keys: { license: { kid: string; spki: string }[] };
};

describe("the vectors", () => {
  test.each(vectors.cases.map((c) => [c.name, c] as const))("%s", async (_name, c) => {
    const sent: { method: string; path: string; authorization: string | null; body: unknown }[] = [];
    const client = new KeyturnClient({
      variant: index.site.variant,
      issuer: index.site.iss,
      licenseKeys: Object.fromEntries(index.keys.license.map((k) => [k.kid, k.spki])),
      now: () => Date.parse(vectors.now),
      fetch: async (input, init) => {
        const url = new URL(input);
        const headers = new Headers(init?.headers);
        sent.push({ method: init!.method!, path: url.pathname, authorization: headers.get("authorization"), body: JSON.parse(String(init!.body)) });
        return new Response(JSON.stringify(c.answer.body), { status: c.answer.status, headers: { "content-type": "application/json" } });
      },
    });
    let outcome: { result?: unknown; error?: string; status?: number };
    try {
      const result =
        c.call === "use"
          ? await client.use("TOKEN", c.args as { meter: string; amount: number; idempotencyKey: string })
          : await client.startTrial(c.args.device as Device);
      outcome = {
        result:
          "verified" in (result as object)
            ? { token: (result as { token: string }).token, entitlement: (result as { entitlement: unknown }).entitlement }
            : result,
      };
    } catch (e) {
      const err = e as KeyturnClientError;
      outcome = { error: err.code, ...(err.status !== undefined ? { status: err.status } : {}) };
    }
    expect(sent).toEqual([c.request]);
    expect(outcome).toEqual(c.kit);
  });

  test("the kit refuses a bad amount or idempotency key before sending anything", async () => {
    let sent = 0;
    const client = new KeyturnClient({ variant: "alpha", issuer: index.site.iss, licenseKeys: {}, fetch: async () => (sent++, new Response("{}")) });
    await expect(client.use("t", { meter: "exports", amount: 0 })).rejects.toThrow("amount");
    await expect(client.use("t", { meter: "exports", amount: 1, idempotencyKey: "has space" })).rejects.toThrow("idempotencyKey");
    expect(sent).toBe(0);
  });
});

describe("the kit against a real site", () => {
  let site: TestSite;
  let client: KeyturnClient;

  beforeAll(async () => {
    site = await testSite("alpha", { tables: { plans: { eval: { channels: ["stable"] } } }, settings: { "trial-plan": "eval" } });
    const kid = VARIANTS.alpha.defaultLicenseKid;
    client = new KeyturnClient({
      variant: "alpha",
      issuer: BASE_URL,
      baseUrl: "http://localhost",
      licenseKeys: { [kid]: spkiOf(join(site.dir, "keys", `${kid}.pub.pem`)) },
      now: site.clock,
      fetch: (input, init) => site.app.handle(new Request(input, init)),
    });
  });
  afterAll(() => site.close());

  test("startTrial twice: the same trial, its token checked by the kit; use spends and refuses usage_limit", async () => {
    const dev = device("alpha") as Device;
    const first = await client.startTrial(dev);
    const again = await client.startTrial(dev);
    expect(again.verified.claims.lic).toBe(first.verified.claims.lic);
    expect(first.entitlement.kind).toBe("license");
    expect(await client.meters(first.token)).toEqual({});

    const input = decode(LicenseCreateInput, {
      licensee: "Ada",
      plan: "pro",
      seats: 1,
      channels: ["stable"],
      meters: { exports: { limit: 5, period: "30d" } },
    });
    const { key } = await createLicense(site.composed.services.admin, CLI_CALLER, input);
    const bought = await client.activate(key, dev);
    const used = await client.use(bought.token, { meter: "exports", amount: 3, idempotencyKey: "kit-1" });
    expect(used.remaining).toBe(2);
    expect((await client.meters(bought.token)).exports).toMatchObject({ limit: 5, period: "30d", used: 3, remaining: 2 });
    expect(Date.parse(used.resetsAt!)).toBeGreaterThan(site.clock());
    expect(await client.use(bought.token, { meter: "exports", amount: 3, idempotencyKey: "kit-1" })).toEqual(used);
    const over = await client.use(bought.token, { meter: "exports", amount: 3 }).catch((e) => e as KeyturnClientError);
    expect(over).toBeInstanceOf(KeyturnClientError);
    expect((over as KeyturnClientError).code).toBe("usage_limit");
    expect((over as KeyturnClientError).status).toBe(403);
    // The bought key converted the trial: starting it again is refused.
    const ended = await client.startTrial(dev).catch((e) => e as KeyturnClientError);
    expect((ended as KeyturnClientError).code).toBe("license_expired");
  });
});
