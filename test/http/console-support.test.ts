import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { offlineRequestCode } from "../../src/client";
import { createLogger } from "../../src/config/log";
import { CLI_CALLER, type Scope } from "../../src/domain/admin/deps";
import { createAdminToken } from "../../src/domain/admin/tokens";
import { webhookSecretContext } from "../../src/domain/webhooks/signing";
import { BASE_URL, createLicense, device, testSite, type TestSite } from "../helpers";

// Issue 33 items 3 and 7: support without a shell. Each console action calls the admin API's domain
// function, needs its scope, writes its audit line naming the session's token as actor; destructive
// buttons open a confirmation page naming their object; secrets (a reissued key, an admin token, a
// webhook secret) are shown once and never logged; an offline answer says until when.
const ORIGIN = new URL(BASE_URL).origin;
const DAY = 86_400_000;
let site: TestSite;
const logLines: string[] = [];

interface Browser {
  cookie: string;
  csrf: string;
  tokenId: string;
}
let ops: Browser;

const send = (who: Browser | null, method: string, path: string, form?: Record<string, string | string[]>) => {
  let body: string | undefined;
  if (form) {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(form)) for (const one of [v].flat()) params.append(k, one);
    body = params.toString();
  }
  return site.app.handle(
    new Request(`${ORIGIN}${path}`, {
      method,
      body,
      headers: {
        ...(body !== undefined ? { "content-type": "application/x-www-form-urlencoded", origin: ORIGIN } : {}),
        ...(who ? { cookie: who.cookie } : {}),
      },
    }),
  );
};
const post = (who: Browser, path: string, form: Record<string, string | string[]> = {}) => send(who, "POST", path, { csrf: who.csrf, ...form });

/** Signs in to the console with a new admin token of these scopes. */
async function signIn(name: string, scopes: Scope[]): Promise<Browser> {
  const { token, secret } = await createAdminToken(site.composed.services.admin, CLI_CALLER, { name, scopes });
  const r = await send(null, "POST", "/console/sign-in", { token: secret });
  expect(r.status).toBe(303);
  const who = { cookie: r.headers.get("set-cookie")!.split(";")[0]!, csrf: "", tokenId: token.id };
  // Any page the scopes open carries the session's CSRF token (in its sign-out form).
  for (const path of ["/console/licenses", "/console/webhooks", "/console/offline"]) {
    who.csrf ||= /name="csrf" value="([0-9a-f]{64})"/.exec(await (await send(who, "GET", path)).text())?.[1] ?? "";
  }
  expect(who.csrf).not.toBe("");
  return who;
}

const auditOf = async (action: string) => (await site.composed.store.listAudit({ limit: 1000 })).filter((l) => l.action === action);
/** How many ok lines of `action` name the ops session's token as actor (each action below is done once by it). */
const byOps = async (action: string) => (await auditOf(action)).filter((l) => l.outcome === "ok" && l.actor === `${ops.tokenId} (ops)`).length;
const claimsOf = (token: string) => JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString()) as { exp: number; iat: number; lic: string };
const answerOf = (page: string) => /<textarea id="answer-code"[^>]*>([^<]+)<\/textarea>/.exec(page)?.[1] ?? "";
const keyOf = (page: string, id: string) => new RegExp(`<span class="key" id="${id}">([^<]+)</span>`).exec(page)?.[1] ?? "";
/** The log written so far, once the request line of `path` is out (request lines are written after the answer). */
const logText = async (path: string) => {
  for (let i = 0; i < 200 && !logLines.some((l) => l.includes(`"path":"${path}"`)); i++) await Bun.sleep(1);
  return logLines.join("\n");
};

beforeAll(async () => {
  site = await testSite("alpha", { log: createLogger("json", "debug", (l) => logLines.push(l)) });
  mkdirSync(join(site.dir, "releases"));
  await site.composed.services.releases.ready();
  ops = await signIn("ops", ["admin"]);
});
afterAll(() => site.close());

describe("offline answers from the console (/console/offline)", () => {
  test("a request code and a licence id make an answer code that lasts --offline-token-ttl, says until when, and is audited with the staff token as actor", async () => {
    const { license } = await createLicense(site);
    const form = await send(ops, "GET", `/console/offline?license=${license.id}`);
    expect(form.status).toBe(200);
    expect(await form.text()).toContain(`value="${license.id}"`);
    const r = await post(ops, "/console/offline", { license: license.id, code: offlineRequestCode({ device: device("alpha", { name: "Cabin PC" }) }) });
    expect(r.status).toBe(200);
    const page = await r.text();
    const claims = claimsOf(answerOf(page));
    expect(claims.lic).toBe(license.id);
    // No licence end: the site's offline lifetime, 366 days by default (not the 7 days of online tokens).
    expect(claims.exp * 1000).toBe(site.clock() + 366 * DAY);
    const until = new Date(claims.exp * 1000).toISOString().slice(0, 16).replace("T", " ");
    expect(page).toContain(`This answer code works until ${until} UTC`);
    const line = (await auditOf("activate")).find((l) => l.licenseId === license.id);
    expect(line).toMatchObject({ outcome: "ok", actor: `${ops.tokenId} (ops)` });
  });

  test("a code carrying its key needs no licence field; a licence that ends sooner cuts the answer and the page says so", async () => {
    const ends = site.clock() + 20 * DAY;
    const { key } = await createLicense(site, { expires: ends });
    const r = await post(ops, "/console/offline", { license: "", code: offlineRequestCode({ device: device("alpha"), key }) });
    const page = await r.text();
    expect(r.status).toBe(200);
    expect(claimsOf(answerOf(page)).exp * 1000).toBe(ends);
    expect(page).toContain("when the licence ends");
  });

  test("a session holding only activations:write lands on the offline page", async () => {
    const desk = await signIn("desk", ["activations:write"]);
    const home = await send(desk, "GET", "/console/");
    expect(home.headers.get("location")).toBe("/console/offline");
    expect(await (await send(desk, "GET", "/console/offline")).text()).toContain('href="/console/offline" aria-current="page"');
    // The admin API's scope and no other: a licence's id is enough, without licenses:read.
    const { license } = await createLicense(site);
    const answered = await post(desk, "/console/offline", { license: license.id, code: offlineRequestCode({ device: device("alpha") }) });
    expect(answered.status).toBe(200);
    expect(claimsOf(answerOf(await answered.text())).lic).toBe(license.id);
    expect((await post(desk, "/console/offline", { license: "lic_unknown", code: offlineRequestCode({ device: device("alpha") }) })).status).toBe(403);
  });

  test("a session without activations:write cannot see the page nor make an answer; the refusal names its actor", async () => {
    const reader = await signIn("reader", ["licenses:read", "licenses:write"]);
    const { license } = await createLicense(site);
    expect((await send(reader, "GET", "/console/offline")).status).toBe(403);
    const r = await post(reader, "/console/offline", { license: license.id, code: offlineRequestCode({ device: device("alpha") }) });
    expect(r.status).toBe(403);
    expect((await site.composed.store.listActivations(license.id)).length).toBe(0);
    const refused = (await auditOf("activate")).filter((l) => l.outcome === "refused" && l.error === "insufficient_scope");
    expect(refused.map((l) => l.actor)).toContain(`${reader.tokenId} (reader)`);
    // Neither the menu nor the licence's page offers it.
    expect(await (await send(reader, "GET", `/console/licenses/${license.id}`)).text()).not.toContain("/console/offline");
  });
});

describe("a licence's token lifetime", () => {
  test("set in days from the licence's page, said done, used by the next offline answer, and cleared again", async () => {
    const { license } = await createLicense(site);
    const r = await post(ops, `/console/licenses/${license.id}/token-ttl`, { days: "30" });
    expect(r.status).toBe(303);
    expect(r.headers.get("location")).toBe(`/console/licenses/${license.id}?done=token-ttl-saved`);
    const page = await (await send(ops, "GET", r.headers.get("location")!)).text();
    expect(page).toContain("Token lifetime saved.");
    expect(page).toContain("30 day(s) (this licence&#39;s own)");
    expect((await site.composed.store.getLicense(license.id))!.tokenTtl).toBe(30 * 86_400);
    expect((await auditOf("license-update")).find((l) => l.licenseId === license.id)).toMatchObject({ outcome: "ok", actor: `${ops.tokenId} (ops)` });
    const answered = await (await post(ops, "/console/offline", { license: license.id, code: offlineRequestCode({ device: device("alpha") }) })).text();
    expect(claimsOf(answerOf(answered)).exp * 1000).toBe(site.clock() + 30 * DAY);

    expect((await post(ops, `/console/licenses/${license.id}/token-ttl`, { days: "" })).status).toBe(303);
    expect((await site.composed.store.getLicense(license.id))!.tokenTtl).toBeNull();
    expect((await post(ops, `/console/licenses/${license.id}/token-ttl`, { days: "400" })).status).toBe(400);
  });

  test("needs licenses:write", async () => {
    const reader = await signIn("ttl-reader", ["licenses:read"]);
    const { license } = await createLicense(site);
    expect((await post(reader, `/console/licenses/${license.id}/token-ttl`, { days: "30" })).status).toBe(403);
    expect((await site.composed.store.getLicense(license.id))!.tokenTtl ?? null).toBeNull();
  });
});

describe("reissuing a lost key", () => {
  test("the button asks first, naming the licence; the new key is shown once, works, the old one does not, and neither is logged", async () => {
    const { license, key: oldKey } = await createLicense(site, { licensee: "Grace Hopper" });
    const licensePage = await (await send(ops, "GET", `/console/licenses/${license.id}`)).text();
    expect(licensePage).toContain(`<form class="inline" method="get" action="/console/licenses/${license.id}/rekey">`);
    const confirm = await send(ops, "GET", `/console/licenses/${license.id}/rekey`);
    const confirmText = await confirm.text();
    expect(confirmText).toContain(`Give the licence of Grace Hopper (Analytical Engines Ltd), ${license.id}, a new key?`);
    expect(confirmText).toContain(`<form class="row" method="post" action="/console/licenses/${license.id}/rekey">`);
    // Asking changed nothing; a POST without the session's CSRF token changes nothing either.
    expect((await send(ops, "POST", `/console/licenses/${license.id}/rekey`, { csrf: "0".repeat(64) })).status).toBe(400);
    expect((await site.composed.store.getLicense(license.id))!.keyHash).toBe(license.keyHash);

    const r = await post(ops, `/console/licenses/${license.id}/rekey`);
    expect(r.status).toBe(200);
    expect(r.headers.get("cache-control")).toBe("no-store");
    const newKey = keyOf(await r.text(), "license-key");
    expect(newKey).toMatch(/^[0-9A-Z-]{20,}$/);
    expect(newKey).not.toBe(oldKey);
    const licensing = site.composed.services.licensing;
    await expect(licensing.activate({ key: oldKey, device: device("alpha") }, { address: null })).rejects.toMatchObject({ code: "license_unknown" });
    expect((await licensing.activate({ key: newKey, device: device("alpha") }, { address: null })).entitlement.licensee).toBe("Grace Hopper");
    expect((await auditOf("license-rekey")).find((l) => l.licenseId === license.id)).toMatchObject({ outcome: "ok", actor: `${ops.tokenId} (ops)` });
    // Never again: the licence's page does not hold it, nor does the log or the audit trail.
    expect(await (await send(ops, "GET", `/console/licenses/${license.id}`)).text()).not.toContain(newKey);
    const logged = await logText(`/console/licenses/${license.id}/rekey`);
    expect(logged).toContain(`"path":"/console/licenses/${license.id}/rekey"`);
    expect(logged).not.toContain(newKey);
    expect(JSON.stringify(await site.composed.store.listAudit({ limit: 1000 }))).not.toContain(newKey);
  });

  test("needs licenses:write: the confirmation and the action are refused, the key unchanged", async () => {
    const reader = await signIn("rekey-reader", ["licenses:read", "activations:write"]);
    const { license } = await createLicense(site);
    expect((await send(reader, "GET", `/console/licenses/${license.id}/rekey`)).status).toBe(403);
    expect((await post(reader, `/console/licenses/${license.id}/rekey`)).status).toBe(403);
    expect((await site.composed.store.getLicense(license.id))!.keyHash).toBe(license.keyHash);
  });
});

describe("destructive buttons confirm, naming their object, and the page says what was done", () => {
  test("revoke: the licence page's button is a GET to a confirmation; only its POST revokes; then 'Licence revoked.'", async () => {
    const { license } = await createLicense(site, { licensee: "Alan Turing" });
    const page = await (await send(ops, "GET", `/console/licenses/${license.id}`)).text();
    expect(page).toContain(
      `<form class="inline" method="get" action="/console/licenses/${license.id}/revoke"><button type="submit" class="danger">Revoke licence</button></form>`,
    );
    const confirm = await (await send(ops, "GET", `/console/licenses/${license.id}/revoke`)).text();
    expect(confirm).toContain(`Revoke the licence of Alan Turing (Analytical Engines Ltd), ${license.id}?`);
    expect((await site.composed.store.getLicense(license.id))!.revoked).toBeNull();
    const r = await post(ops, `/console/licenses/${license.id}/revoke`);
    expect(r.status).toBe(303);
    expect(r.headers.get("location")).toBe(`/console/licenses/${license.id}?done=license-revoked`);
    expect(await (await send(ops, "GET", r.headers.get("location")!)).text()).toContain(">Licence revoked.</p>");
    expect((await site.composed.store.getLicense(license.id))!.revoked).not.toBeNull();
    // A licence sold to a person (no organisation) is named by its licensee alone.
    const person = await createLicense(site, { licensee: "Barbara Liskov", organization: undefined });
    expect(await (await send(ops, "GET", `/console/licenses/${person.license.id}/revoke`)).text()).toContain(
      `Revoke the licence of Barbara Liskov, ${person.license.id}?`,
    );
    // Only the fixed sentences are shown: text in the address is not echoed.
    expect(await (await send(ops, "GET", `/console/licenses/${license.id}?done=%3Cb%3Ehi`)).text()).not.toContain("hi</");
  });

  test("deactivate names the installation and its licence; withdraw names the release and its lane", async () => {
    const { key, license } = await createLicense(site, { licensee: "Edsger Dijkstra" });
    const { entitlement } = await site.composed.services.licensing.activate({ key: key, device: device("alpha", { name: "Lab <PC>" }) }, { address: null });
    const confirm = await (await send(ops, "GET", `/console/activations/${entitlement.id}/deactivate`)).text();
    expect(confirm).toContain("Deactivate &quot;Lab &lt;PC&gt;&quot;");
    expect(confirm).toContain("of the licence of Edsger Dijkstra?");
    const r = await post(ops, `/console/activations/${entitlement.id}/deactivate`);
    expect(r.headers.get("location")).toBe(`/console/licenses/${license.id}?done=installation-deactivated`);

    const lane = encodeURIComponent("alpha/stable/win-x64");
    const withdraw = await send(ops, "GET", `/console/releases/${lane}/1.2.0/withdraw`);
    expect(withdraw.status).toBe(200);
    expect(await withdraw.text()).toContain("Withdraw version 1.2.0 of alpha/stable/win-x64?");
    // resume and restore act at once: they give a release back.
    expect((await send(ops, "GET", `/console/releases/${lane}/1.2.0/resume`)).status).toBe(405);
  });
});

describe("admin tokens (/console/tokens, scope admin)", () => {
  test("created with its scopes and shown once, listed, revoked after a confirmation naming it, audited with the actor", async () => {
    const r = await post(ops, "/console/tokens", { name: "billing bot", scopes: ["licenses:read", "licenses:write"] });
    expect(r.status).toBe(201);
    const secret = keyOf(await r.text(), "admin-token-secret");
    expect(secret).toMatch(/^kta_[A-Za-z0-9_-]{43}$/);
    const api = (token: string) => site.request("GET", "/admin/licenses", { token });
    expect((await api(secret)).status).toBe(200);
    expect((await site.request("GET", "/admin/audit", { token: secret })).status).toBe(403);
    const list = await (await send(ops, "GET", "/console/tokens")).text();
    expect(list).toContain("billing bot");
    expect(list).toContain("licenses:read, licenses:write");
    expect(list).not.toContain(secret);
    expect(await logText("/console/tokens")).not.toContain(secret);
    expect(await byOps("admin-token-create")).toBe(1);

    const id = (await site.composed.store.listAdminTokens()).find((t) => t.name === "billing bot")!.id;
    const confirm = await (await send(ops, "GET", `/console/tokens/${id}/revoke`)).text();
    expect(confirm).toContain(`Revoke the admin token &quot;billing bot&quot; (${id}, licenses:read, licenses:write)?`);
    expect((await api(secret)).status).toBe(200);
    const revoked = await post(ops, `/console/tokens/${id}/revoke`);
    expect(revoked.headers.get("location")).toBe("/console/tokens?done=admin-token-revoked");
    expect(await (await send(ops, "GET", revoked.headers.get("location")!)).text()).toContain("Admin token revoked.");
    expect((await api(secret)).status).toBe(401);
    expect(await byOps("admin-token-revoke")).toBe(1);
  });

  test("a session without admin: not in the menu, the page and the actions are 403", async () => {
    const support = await signIn("support", ["licenses:read", "licenses:write", "activations:write", "webhooks:write"]);
    expect(await (await send(support, "GET", "/console/licenses")).text()).not.toContain('href="/console/tokens"');
    expect((await send(support, "GET", "/console/tokens")).status).toBe(403);
    expect((await post(support, "/console/tokens", { name: "sneaky", scopes: "admin" })).status).toBe(403);
    expect((await site.composed.store.listAdminTokens()).some((t) => t.name === "sneaky")).toBe(false);
    expect((await post(support, `/console/tokens/${ops.tokenId}/revoke`)).status).toBe(403);
  });
});

describe("webhook endpoints from the console", () => {
  test("added with its secret shown once, the secret rotated after a confirmation (the sealed record holds the new one), removed", async () => {
    const url = "https://hooks.example.com/keyturn";
    const added = await post(ops, "/console/webhooks", { url, events: ["license.created", "license.revoked"] });
    expect(added.status).toBe(201);
    const first = keyOf(await added.text(), "webhook-secret");
    expect(first).toMatch(/^whsec_/);
    const endpoint = (await site.composed.store.listWebhookEndpoints()).find((e) => e.url === url)!;
    expect(endpoint.types).toEqual(["license.created", "license.revoked"]);
    const seal = site.composed.services.admin.seal!;
    const stored = async () => seal.open((await site.composed.store.getWebhookEndpoint(endpoint.id))!.secret, webhookSecretContext(endpoint.id));
    expect(await stored()).toBe(first);

    const page = await (await send(ops, "GET", "/console/webhooks")).text();
    expect(page).toContain(`action="/console/webhooks/${endpoint.id}/rotate-secret"`);
    expect(page).not.toContain(first);
    const confirm = await (await send(ops, "GET", `/console/webhooks/${endpoint.id}/rotate-secret`)).text();
    expect(confirm).toContain(`Give the endpoint ${url} (${endpoint.id}) a new signing secret?`);
    const rotated = await post(ops, `/console/webhooks/${endpoint.id}/rotate-secret`);
    const second = keyOf(await rotated.text(), "webhook-secret");
    expect(second).toMatch(/^whsec_/);
    expect(second).not.toBe(first);
    expect(await stored()).toBe(second);
    expect(await byOps("webhook-rotate-secret")).toBe(1);
    const logged = await logText(`/console/webhooks/${endpoint.id}/rotate-secret`);
    expect(logged).not.toContain(first);
    expect(logged).not.toContain(second);

    expect(await (await send(ops, "GET", `/console/webhooks/${endpoint.id}/remove`)).text()).toContain(`Remove the endpoint ${url} (${endpoint.id})?`);
    const removed = await post(ops, `/console/webhooks/${endpoint.id}/remove`);
    expect(removed.headers.get("location")).toBe("/console/webhooks?done=webhook-removed");
    expect(await (await send(ops, "GET", removed.headers.get("location")!)).text()).toContain("Webhook endpoint removed.");
    expect(await site.composed.store.getWebhookEndpoint(endpoint.id)).toBeNull();
    expect(await byOps("webhook-remove")).toBe(1);
  });

  test("needs webhooks:write: a reader gets no form and is refused", async () => {
    const reader = await signIn("hooks-reader", ["webhooks:read"]);
    const page = await (await send(reader, "GET", "/console/webhooks")).text();
    expect(page).not.toContain("Add endpoint");
    expect((await post(reader, "/console/webhooks", { url: "https://hooks.example.com/x", events: "license.created" })).status).toBe(403);
    expect((await site.composed.store.listWebhookEndpoints()).some((e) => e.url === "https://hooks.example.com/x")).toBe(false);
  });
});
