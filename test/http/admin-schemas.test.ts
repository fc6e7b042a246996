import { afterEach, beforeEach, expect, test } from "bun:test";
import type { TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { VARIANTS } from "../../src/config/variants";
import { queryAudit } from "../../src/domain/admin/audit-query";
import { CLI_CALLER, type AdminDeps } from "../../src/domain/admin/deps";
import { decode } from "../../src/domain/decode";
import { readFeed } from "../../src/domain/admin/feed";
import {
  createLicense,
  deactivateActivation,
  listActivations,
  revokeLicense,
  searchLicenses,
  showLicense,
  updateLicense,
} from "../../src/domain/admin/licenses";
import { createAdminToken, listAdminTokens } from "../../src/domain/admin/tokens";
import { addWebhookEndpoint, listDeliveries, listWebhookEndpoints, showDelivery } from "../../src/domain/webhooks/endpoints";
import { WebhookWorker } from "../../src/domain/webhooks/worker";
import { silentLogger } from "../../src/config/log";
import * as S from "../../src/http/admin-schemas";
import { device, testSite, type TestSite } from "../helpers";

let site: TestSite;
let d: AdminDeps;
beforeEach(async () => {
  site = await testSite("alpha");
  d = { variant: VARIANTS.alpha, store: site.composed.store, clock: site.clock, tokenTtlSeconds: 3600, webhookDestinations: { allowHosts: ["127.0.0.1"] } };
});
afterEach(() => site.close());

const fits = (schema: TSchema, answer: object) => {
  const value = { ok: true, ...answer };
  expect([...Value.Errors(schema, value)].map((e) => `${e.path}: ${e.message}`)).toEqual([]);
};

test("every admin service's answer fits its schema in src/http/admin-schemas.ts, and the request schemas accept what the services accept", async () => {
  const createBody = {
    licensee: "A",
    organization: "O",
    plan: "p",
    planTitle: "P",
    seats: 2,
    channels: ["stable"],
    email: "a@b.example",
    metadata: { k: "v" },
    expires: "2030-01-01T00:00:00+00:00",
  };
  expect(Value.Check(S.AdminLicenseCreateBody, createBody)).toBe(true);
  expect(Value.Check(S.AdminLicenseCreateBody, { ...createBody, extra: 1 })).toBe(false);
  expect(Value.Check(S.AdminLicenseUpdateBody, { seats: 3, expires: null })).toBe(true);
  const created = await createLicense(d, CLI_CALLER, createBody);
  fits(S.AdminLicenseCreated, created);
  const r = await site.request("POST", "/licenses/activate", { body: { key: created.key, device: device("alpha") } });
  const act = ((await r.json()) as { entitlement: { id: string } }).entitlement.id;
  fits(S.AdminLicensePage, await searchLicenses(d, CLI_CALLER, { limit: "1" }));
  fits(S.AdminLicenseShown, await showLicense(d, CLI_CALLER, created.license.id));
  fits(S.AdminLicenseUpdated, await updateLicense(d, CLI_CALLER, created.license.id, { seats: 3 }));
  fits(S.AdminActivationList, { activations: await listActivations(d, CLI_CALLER, created.license.id) });
  fits(S.AdminActivationAnswer, { activation: await deactivateActivation(d, CLI_CALLER, act) });
  fits(S.AdminLicenseAnswer, { license: await revokeLicense(d, CLI_CALLER, created.license.id) });
  fits(S.AdminAuditPage, await queryAudit(d, CLI_CALLER, {}));
  const snapshot = await readFeed(d, CLI_CALLER, {});
  expect(snapshot.mode === "snapshot" && snapshot.revocations.length).toBeGreaterThan(0);
  fits(S.AdminFeedPage, snapshot);
  const feed = await readFeed(d, CLI_CALLER, { after: `${snapshot.epoch}.0` });
  expect(feed.mode === "events" && feed.events.length).toBeGreaterThan(0);
  fits(S.AdminFeedPage, feed);
  expect(Value.Check(S.AdminFeedQuery, { after: feed.cursor, limit: "10" })).toBe(true);
  const tokenBody = { name: "ci", scopes: ["licenses:read"] };
  expect(Value.Check(S.AdminTokenCreateBody, tokenBody)).toBe(true);
  fits(S.AdminTokenCreated, await createAdminToken(d, CLI_CALLER, decode(S.AdminTokenCreateBody, tokenBody)));
  fits(S.AdminTokenList, { tokens: await listAdminTokens(d, CLI_CALLER) });
  const hookBody = { url: "http://127.0.0.1:9/h", events: ["license.created"] };
  expect(Value.Check(S.WebhookEndpointCreateBody, hookBody)).toBe(true);
  fits(S.WebhookEndpointCreated, await addWebhookEndpoint(d, CLI_CALLER, decode(S.WebhookEndpointCreateBody, hookBody)));
  fits(S.WebhookEndpointList, { endpoints: await listWebhookEndpoints(d, CLI_CALLER) });
  await createLicense(d, CLI_CALLER, createBody);
  await new WebhookWorker({ store: d.store, clock: d.clock, log: silentLogger, timeoutMs: 200, destinations: d.webhookDestinations }).tick();
  const page = await listDeliveries(d, CLI_CALLER, {});
  expect(page.deliveries.length).toBe(1);
  fits(S.WebhookDeliveryPage, page);
  fits(S.WebhookDeliveryShown, await showDelivery(d, CLI_CALLER, page.deliveries[0]!.id));
});
