import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { compose } from "../../src/compose";
import { toConfig } from "../../src/config/config";
import { silentLogger } from "../../src/config/log";
import { createApp } from "../../src/http/app";
import { BASE_URL, testClock, testSite, type TestSite } from "../helpers";
import { startRealIssuer, type RealIssuer } from "../real-issuer";

// A staff console session must not outlive its grant. Against a real OpenID
// provider (oidc-provider): the console's sign-in (code + PKCE) through the same Elysia instance
// production uses, then the person disabled at the issuer, and a group taken out of
// --console-groups with the site restarted over the same records.

const CLIENT_ID = "keyturn-console";
const ORIGIN = new URL(BASE_URL).origin;
const CALLBACK = `${ORIGIN}/console/oidc/callback`;
/** The provider's ID token lifetime: the longest a console session of a person disabled there lives on. */
const ID_TOKEN_SECONDS = 3600;
const CONSOLE_GROUPS = "support=licenses:read,licenses:write;ops=admin";

let issuer: RealIssuer;
let site: TestSite;
const clock = testClock(Date.now());

const settingsOf = (consoleGroups: string) => ({
  "identity-issuer": issuer.url,
  "identity-client-id": CLIENT_ID,
  "identity-groups": "keyturn-staff",
  "console-groups": consoleGroups,
});

beforeAll(async () => {
  issuer = await startRealIssuer({
    clients: [
      {
        client_id: CLIENT_ID,
        token_endpoint_auth_method: "none",
        redirect_uris: [CALLBACK],
        grant_types: ["authorization_code"],
        response_types: ["code"],
        id_token_signed_response_alg: "RS256",
      },
    ],
    people: {
      grace: { password: "correct horse", otp: "123456", claims: { name: "Grace Hopper", email: "grace@example.com", groups: ["keyturn-staff", "support"] } },
      ada: { password: "engines", otp: "424242", claims: { name: "Ada", email: "ada@example.com", groups: ["keyturn-staff", "ops", "marketing"] } },
    },
    idTokenSeconds: ID_TOKEN_SECONDS,
  });
  site = await testSite("alpha", { clock, settings: settingsOf(CONSOLE_GROUPS) });
});

afterAll(async () => {
  await site?.close();
  issuer?.stop();
});

type Handle = (request: Request) => Promise<Response>;

const cookieOf = (res: Response, name: string) => {
  const line = res.headers.getSetCookie().find((c) => c.startsWith(`${name}=`));
  return line ? line.slice(name.length + 1, line.indexOf(";")) : null;
};

/** The console's OpenID sign-in as a browser makes it: start, the issuer's pages, the callback. */
async function signIn(handle: Handle, login: string): Promise<{ session: string; page: Response }> {
  const start = await handle(new Request(`${ORIGIN}/console/oidc/start`));
  expect(start.status).toBe(303);
  const pending = cookieOf(start, "__Host-keyturn-oidc")!;
  const back = await issuer.signIn(start.headers.get("location")!, login, CALLBACK);
  const page = await handle(new Request(back.href, { headers: { cookie: `__Host-keyturn-oidc=${pending}` } }));
  return { session: cookieOf(page, "__Host-keyturn-console") ?? "", page };
}

const get = (handle: Handle, path: string, session: string) =>
  handle(new Request(`${ORIGIN}${path}`, { headers: { cookie: `__Host-keyturn-console=${session}` } }));

describe("staff console sessions against a real OpenID provider", () => {
  test("a successful sign-in is audited naming the person; the session lives no longer than the issuer's ID token", async () => {
    const before = clock();
    const { session, page } = await signIn(site.app.handle, "grace");
    expect(page.status).toBe(200);
    expect(session).toMatch(/^[0-9A-Z]{32}$/);
    expect((await get(site.app.handle, "/console/licenses", session)).status).toBe(200);
    const [line] = await site.composed.store
      .listAudit({ limit: 50 })
      .then((lines) => lines.filter((l) => l.action === "console-sign-in" && l.outcome === "ok"));
    expect(line?.actor).toBe("staff:grace (Grace Hopper)");
    const mine = await site.composed.services.consoleSessions.find(session, "console");
    const listed = (await site.composed.services.consoleSessions.list()).find((v) => v.id === mine!.id);
    expect(listed).toMatchObject({ kind: "staff", subject: "grace", groups: ["support"], scopes: ["licenses:read", "licenses:write"] });
    // Bounded by the ID token's exp (issued by the provider's clock, the real one), not by a working day.
    expect(listed!.expires).toBeLessThanOrEqual(Date.now() + ID_TOKEN_SECONDS * 1000);
    expect(listed!.expires).toBeGreaterThan(before + (ID_TOKEN_SECONDS - 120) * 1000);
  });

  test("a person disabled at the issuer: the open session is refused once the issuer's assertion ends, and no new one opens", async () => {
    const signedInAt = clock();
    const { session } = await signIn(site.app.handle, "grace");
    const open = await site.composed.services.consoleSessions.find(session, "console");
    issuer.people.grace!.disabled = true;
    try {
      // Within the ID token's lifetime the console still takes the session (the issuer vouched until then)...
      expect((await get(site.app.handle, "/console/licenses", session)).status).toBe(200);
      // ...and past it, the session is refused: a page goes to the sign-in, an action is 401.
      clock.set(open!.expires);
      const refused = await get(site.app.handle, "/console/licenses", session);
      expect(refused.status).toBe(303);
      expect(refused.headers.get("location")).toBe("/console/sign-in");
      const create = await site.app.handle(
        new Request(`${ORIGIN}/console/licenses`, {
          method: "POST",
          headers: { cookie: `__Host-keyturn-console=${session}`, origin: ORIGIN, "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ licensee: "Made after disabling", organization: "X", seats: "1", channels: "stable" }).toString(),
        }),
      );
      expect(create.status).toBe(401);
      expect((await site.composed.store.listLicenses()).some((l) => l.licensee === "Made after disabling")).toBe(false);
      // Signing in again is where the issuer says no.
      await expect(signIn(site.app.handle, "grace")).rejects.toThrow(/the issuer answered 403/);
      // Before this change the session lasted a working day (8 hours); now the ID token's hour, give or take the clocks' drift.
      expect(open!.expires - signedInAt).toBeLessThan((ID_TOKEN_SECONDS + 120) * 1000);
    } finally {
      issuer.people.grace!.disabled = false;
      clock.set(Date.now());
    }
  });

  test("a group taken out of --console-groups, the site restarted: the old session is refused; one whose other group stays keeps only that", async () => {
    const grace = await signIn(site.app.handle, "grace");
    const ada = await signIn(site.app.handle, "ada");
    expect((await get(site.app.handle, "/console/sessions", ada.session)).status).toBe(200);
    expect((await get(site.app.handle, "/console/licenses", grace.session)).status).toBe(200);

    // The same records, the same keys, another process: --console-groups without support.
    const restarted = await restart("ops=admin");
    try {
      const refused = await get(restarted.handle, "/console/licenses", grace.session);
      expect(refused.status).toBe(303);
      expect(refused.headers.get("location")).toBe("/console/sign-in");
      expect((await get(restarted.handle, "/console/sessions", ada.session)).status).toBe(200);
    } finally {
      await restarted.close();
    }
    // And ops downgraded to reading licences: ada's session holds that and no more.
    const narrowed = await restart("ops=licenses:read");
    try {
      expect((await get(narrowed.handle, "/console/licenses", ada.session)).status).toBe(200);
      expect((await get(narrowed.handle, "/console/sessions", ada.session)).status).toBe(403);
    } finally {
      await narrowed.close();
    }
  });

  test("an admin ends a staff member's session from the console page; its next request is signed out", async () => {
    const grace = await signIn(site.app.handle, "grace");
    const ada = await signIn(site.app.handle, "ada");
    const list = await get(site.app.handle, "/console/sessions", ada.session);
    const html = await list.text();
    expect(html).toContain("Grace Hopper");
    const graceId = (await site.composed.services.consoleSessions.find(grace.session, "console"))!.id;
    expect(html).toContain(`/console/sessions/${graceId}/end`);
    const csrf = /name="csrf" value="([0-9a-f]{64})"/.exec(html)![1]!;
    const ended = await site.app.handle(
      new Request(`${ORIGIN}/console/sessions/${graceId}/end`, {
        method: "POST",
        headers: { cookie: `__Host-keyturn-console=${ada.session}`, origin: ORIGIN, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ csrf }).toString(),
      }),
    );
    expect(ended.status).toBe(303);
    expect(ended.headers.get("location")).toBe("/console/sessions?ended=1");
    expect((await get(site.app.handle, "/console/licenses", grace.session)).status).toBe(303);
    const [line] = (await site.composed.store.listAudit({ limit: 20 })).filter((l) => l.action === "console-session-end");
    expect(line?.actor).toBe("staff:ada (Ada)");
    // grace holds no admin: the page is not for her (and she is signed out anyway).
    const again = await signIn(site.app.handle, "grace");
    expect((await get(site.app.handle, "/console/sessions", again.session)).status).toBe(403);
  });
});

/** Another process over the site's records with other settings (a restart with a changed configuration). */
async function restart(consoleGroups: string): Promise<{ handle: Handle; close: () => Promise<void> }> {
  const config = toConfig(
    {
      variant: "alpha",
      "base-url": BASE_URL,
      data: join(site.dir, "data"),
      keys: join(site.dir, "keys"),
      releases: join(site.dir, "releases"),
      "rate-limit-signin": "1000000/60s",
      "rate-limit-api": "1000000/60s",
      ...settingsOf(consoleGroups),
    },
    "admin",
  );
  const composed = await compose(config, { clock, log: silentLogger, peerAddress: () => "203.0.113.7" });
  const app = createApp(composed.services);
  return { handle: (r) => app.handle(r), close: () => composed.store.close() };
}
