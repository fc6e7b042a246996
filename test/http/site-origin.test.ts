import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CLI_CALLER } from "../../src/domain/admin/deps";
import { createAdminToken } from "../../src/domain/admin/tokens";
import { BASE_URL, createLicense, testClock, testSite, type TestSite } from "../helpers";
import { startIssuer, CLIENT_ID, STAFF_GROUP, type LocalIssuer } from "../identity-issuer";

// The site's public origin is --base-url (docs/operating.md, "Behind a TLS proxy"): a proxy
// terminates TLS and hands keyturn `http://<upstream>/...`; the browser's Origin is --base-url's.
// Every request here arrives as a proxy forwards it: plain http to an upstream address.
const UPSTREAM = "http://10.0.0.5:8080";
const PUBLIC = new URL(BASE_URL).origin;
const FORM = "application/x-www-form-urlencoded";

let site: TestSite;
let issuer: LocalIssuer;
let token = "";

const post = (path: string, body: string, headers: Record<string, string>) =>
  site.app.handle(new Request(`${UPSTREAM}${path}`, { method: "POST", body, headers: { "content-type": FORM, ...headers } }));
const signIn = (headers: Record<string, string>) => post("/console/sign-in", new URLSearchParams({ token }).toString(), headers);

/** `name=value` of a Set-Cookie header, and its attributes in lower case. */
function cookieOf(response: Response): { pair: string; name: string; attributes: string[] } {
  const header = response.headers.get("set-cookie") ?? "";
  const [pair = "", ...attributes] = header.split(";").map((part) => part.trim());
  return { pair, name: pair.split("=")[0]!, attributes: attributes.map((a) => a.toLowerCase()) };
}

beforeAll(async () => {
  const clock = testClock();
  issuer = await startIssuer(clock);
  site = await testSite("alpha", {
    clock,
    settings: { "identity-issuer": issuer.url, "identity-client-id": CLIENT_ID, "identity-groups": STAFF_GROUP, "console-groups": `${STAFF_GROUP}=admin` },
  });
  token = (await createAdminToken(site.composed.services.admin, CLI_CALLER, { name: "ops", scopes: ["admin"] })).secret;
});
afterAll(async () => {
  issuer?.stop();
  await site?.close();
});

describe("behind a TLS proxy, the public origin is --base-url", () => {
  test("a console sign-in sent from the https site's page is accepted, into a Secure __Host- cookie", async () => {
    const r = await signIn({ origin: PUBLIC, host: "10.0.0.5:8080" });
    expect(r.status).toBe(303);
    const cookie = cookieOf(r);
    expect(cookie.name).toBe("__Host-keyturn-console");
    expect(cookie.attributes).toEqual(expect.arrayContaining(["secure", "httponly", "samesite=strict", "path=/"]));
    expect(cookie.attributes.some((a) => a.startsWith("domain="))).toBe(false);
  });

  test("a portal sign-in sent from the https site's page is accepted, into a Secure __Host- cookie", async () => {
    const { key } = await createLicense(site);
    const r = await post("/portal/sign-in", new URLSearchParams({ key }).toString(), { origin: PUBLIC });
    expect(r.status).toBe(303);
    const cookie = cookieOf(r);
    expect(cookie.name).toBe("__Host-keyturn-portal");
    expect(cookie.attributes).toContain("secure");
  });

  test("the Origin the request's own URL or Host would make is not this site's: refused", async () => {
    for (const origin of [UPSTREAM, "http://licenses.example.com", "https://evil.example"]) {
      const r = await signIn({ origin });
      expect(r.status).toBe(400);
      expect(r.headers.get("set-cookie")).toBeNull();
      expect(await r.text()).toContain("not sent from this site");
    }
    // A Host the client chose (DNS rebinding: evil.example resolves to the site) with a matching Origin.
    const rebound = await site.app.handle(
      new Request("http://evil.example/console/sign-in", {
        method: "POST",
        body: new URLSearchParams({ token }).toString(),
        headers: { "content-type": FORM, host: "evil.example", origin: "http://evil.example" },
      }),
    );
    expect(rebound.status).toBe(400);
  });

  test("without Origin, only Sec-Fetch-Site: same-origin counts; neither header is refused", async () => {
    expect((await signIn({})).status).toBe(400);
    expect((await signIn({ "sec-fetch-site": "cross-site" })).status).toBe(400);
    expect((await signIn({ "sec-fetch-site": "same-site" })).status).toBe(400);
    expect((await signIn({ "sec-fetch-site": "none" })).status).toBe(400);
    expect((await signIn({ "sec-fetch-site": "same-origin" })).status).toBe(303);
  });

  test("a signed-in console form POST: accepted from the site's origin, refused without Origin and Sec-Fetch-Site", async () => {
    const cookie = cookieOf(await signIn({ origin: PUBLIC })).pair;
    const page = await site.app.handle(new Request(`${UPSTREAM}/console/licenses`, { headers: { cookie } }));
    const csrf = /name="csrf" value="([0-9a-f]{64})"/.exec(await page.text())![1]!;
    const body = new URLSearchParams({ csrf, licensee: "Grace", organization: "Navy", plan: "p", planTitle: "P", seats: "1", channels: "stable" }).toString();
    const count = async () => (await site.composed.store.searchLicenses({ now: site.clock(), limit: 100 })).length;
    const before = await count();
    expect((await post("/console/licenses", body, { cookie })).status).toBe(400);
    expect((await post("/console/licenses", body, { cookie, "sec-fetch-site": "cross-site" })).status).toBe(400);
    expect((await post("/console/licenses", body, { cookie, origin: UPSTREAM })).status).toBe(400);
    expect(await count()).toBe(before);
    expect((await post("/console/licenses", body, { cookie, origin: PUBLIC })).status).toBe(201);
    expect((await post("/console/licenses", body, { cookie, "sec-fetch-site": "same-origin" })).status).toBe(201);
    expect(await count()).toBe(before + 2);
  });

  test("the OpenID redirect_uri is --base-url's, whatever address the request came to", async () => {
    const r = await site.app.handle(new Request(`${UPSTREAM}/console/oidc/start`));
    expect(r.status).toBe(303);
    const location = new URL(r.headers.get("location")!);
    expect(location.origin).toBe(new URL(issuer.url).origin);
    expect(location.searchParams.get("redirect_uri")).toBe(`${BASE_URL}/console/oidc/callback`);
    expect(cookieOf(r).name).toBe("__Host-keyturn-oidc");
    expect(cookieOf(r).attributes).toContain("secure");
  });
});

describe("a site on this machine over plain http (--base-url http://127.0.0.1:PORT)", () => {
  test("cookies have no Secure flag nor __Host- prefix, and the origin is that address", async () => {
    const local = await testSite("alpha", { settings: { "base-url": "http://127.0.0.1:8080" } });
    try {
      const secret = (await createAdminToken(local.composed.services.admin, CLI_CALLER, { name: "ops", scopes: ["admin"] })).secret;
      const send = (origin: string) =>
        local.app.handle(
          new Request("http://127.0.0.1:8080/console/sign-in", {
            method: "POST",
            body: new URLSearchParams({ token: secret }).toString(),
            headers: { "content-type": FORM, origin },
          }),
        );
      expect((await send("http://localhost:8080")).status).toBe(400);
      const r = await send("http://127.0.0.1:8080");
      expect(r.status).toBe(303);
      expect(cookieOf(r).name).toBe("keyturn-console");
      expect(cookieOf(r).attributes).not.toContain("secure");
    } finally {
      await local.close();
    }
  });
});
