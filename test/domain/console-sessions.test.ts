import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createAdminToken } from "../../src/domain/admin/tokens";
import { CLI_CALLER, type Scope } from "../../src/domain/admin/deps";
import { CONSOLE_SESSION_MS, ConsoleSessions, PENDING_SIGN_IN_MS, PORTAL_SESSION_MS } from "../../src/domain/console-sessions";
import { testClock, testSite, type TestSite } from "../helpers";

// The session service over a real SQLite store, with the clock injected: expiry, kinds, revocation.
let site: TestSite;
let sessions: ConsoleSessions;
/** Sessions under a --console-groups mapping of two groups. */
let staff: ConsoleSessions;
const clock = testClock();

beforeAll(async () => {
  site = await testSite("alpha", { clock });
  sessions = new ConsoleSessions({ store: site.composed.store, clock });
  const mapping = new Map<string, Scope[]>([
    ["support", ["licenses:read", "licenses:write"]],
    ["ops", ["audit:read"]],
  ]);
  staff = new ConsoleSessions({ store: site.composed.store, clock, consoleGroups: mapping });
});
afterAll(() => site.close());

const token = async (expires?: string) =>
  (await createAdminToken(site.composed.services.admin, CLI_CALLER, { name: "ops", scopes: ["licenses:read"], ...(expires ? { expires } : {}) })).secret;

describe("console sessions", () => {
  test("a token's session carries its scopes and a CSRF token derived from the secret; it expires server-side", async () => {
    const { secret, session } = await sessions.signInWithToken(await token());
    expect(session.scopes).toEqual(["licenses:read"]);
    expect(session.csrf).toMatch(/^[0-9a-f]{64}$/);
    expect(session.csrf).not.toContain(secret);
    expect((await sessions.find(secret, "console"))?.csrf).toBe(session.csrf);
    // Not a portal session, and no other secret finds it.
    expect(await sessions.find(secret, "portal")).toBeNull();
    expect(
      await sessions.find(
        secret.replace(/.$/, (c) => (c === "0" ? "1" : "0")),
        "console",
      ),
    ).toBeNull();
    clock.advance(CONSOLE_SESSION_MS - 1);
    expect(await sessions.find(secret, "console")).not.toBeNull();
    clock.advance(1);
    expect(await sessions.find(secret, "console")).toBeNull();
  });

  test("a session never outlives its token; a wrong token opens none", async () => {
    const soon = new Date(clock() + 3_600_000).toISOString();
    const { session } = await sessions.signInWithToken(await token(soon));
    expect(session.expires).toBe(Date.parse(soon));
    await expect(sessions.signInWithToken("kta_wrong")).rejects.toMatchObject({ code: "admin_token_invalid" });
  });

  test("sign-out revokes at once; a portal session is short", async () => {
    const { secret } = await sessions.signInPortal("lic_x", "Grace");
    expect((await sessions.find(secret, "portal"))?.licenseId).toBe("lic_x");
    expect((await sessions.find(secret, "portal"))?.expires).toBe(clock() + PORTAL_SESSION_MS);
    await sessions.revoke(secret);
    expect(await sessions.find(secret, "portal")).toBeNull();
  });

  test("a pending OpenID sign-in is taken once, and not after it expired", async () => {
    await sessions.beginPending("A".repeat(32), { verifier: "v", nonce: "n" });
    expect(await sessions.takePending("A".repeat(32))).toEqual({ verifier: "v", nonce: "n" });
    expect(await sessions.takePending("A".repeat(32))).toBeNull();
    await sessions.beginPending("B".repeat(32), { verifier: "v", nonce: "n" });
    clock.advance(PENDING_SIGN_IN_MS);
    expect(await sessions.takePending("B".repeat(32))).toBeNull();
    // A pending sign-in is no session.
    await sessions.beginPending("C".repeat(32), { verifier: "v", nonce: "n" });
    expect(await sessions.find("C".repeat(32), "console")).toBeNull();
  });

  test("staff whose groups give no scope get no session", async () => {
    await expect(sessions.signInStaff("eve", "Eve", [], clock() + 600_000)).rejects.toMatchObject({ code: "not_in_required_group" });
    await expect(staff.signInStaff("eve", "Eve", ["marketing"], clock() + 600_000)).rejects.toMatchObject({ code: "not_in_required_group" });
  });

  test("a staff session keeps groups, and its scopes come from the mapping of the process that reads it", async () => {
    const { secret, session } = await staff.signInStaff("grace", "Grace", ["support", "ops"], clock() + 3_600_000);
    expect(session.groups).toEqual(["support", "ops"]);
    expect(session.scopes).toEqual(["licenses:read", "licenses:write", "audit:read"]);
    // The site restarted with ops taken out of --console-groups: the same cookie holds less.
    const narrower = new ConsoleSessions({ store: site.composed.store, clock, consoleGroups: new Map([["support", ["licenses:read", "licenses:write"]]]) });
    expect((await narrower.find(secret, "console"))?.scopes).toEqual(["licenses:read", "licenses:write"]);
    // And with support taken out as well, the session is refused.
    const none = new ConsoleSessions({ store: site.composed.store, clock, consoleGroups: new Map([["admins", ["admin"]]]) });
    expect(await none.find(secret, "console")).toBeNull();
    expect(await staff.find(secret, "console")).not.toBeNull();
  });

  test("a staff session ends with the issuer's ID token when that comes before a working day", async () => {
    const { secret, session } = await staff.signInStaff("grace", "Grace", ["support"], clock() + 600_000);
    expect(session.expires).toBe(clock() + 600_000);
    clock.advance(599_999);
    expect(await staff.find(secret, "console")).not.toBeNull();
    clock.advance(1);
    expect(await staff.find(secret, "console")).toBeNull();
    const long = await staff.signInStaff("grace", "Grace", ["support"], clock() + 30 * 3_600_000);
    expect(long.session.expires).toBe(clock() + CONSOLE_SESSION_MS);
    await expect(staff.signInStaff("grace", "Grace", ["support"], clock())).rejects.toMatchObject({ code: "token_invalid" });
  });

  test("an admin lists open console sessions and ends one by its id; the others stay", async () => {
    const a = await staff.signInStaff("linus", "Linus", ["support"], clock() + 600_000);
    const b = await sessions.signInWithToken(await token());
    const portal = await sessions.signInPortal("lic_y", "Customer");
    const listed = await staff.list();
    const ids = listed.map((v) => v.id);
    expect(ids).toContain(a.session.id);
    expect(ids).toContain(b.session.id);
    expect(ids).not.toContain(portal.session.id);
    expect(listed.find((v) => v.id === a.session.id)).toMatchObject({
      kind: "staff",
      subject: "linus",
      groups: ["support"],
      scopes: ["licenses:read", "licenses:write"],
      tokenId: null,
    });
    expect(listed.find((v) => v.id === b.session.id)).toMatchObject({ kind: "token", subject: null, groups: null, scopes: ["licenses:read"] });
    expect(JSON.stringify(listed)).not.toContain(a.secret);
    const line = {
      ref: "ref_end",
      time: clock(),
      address: null,
      action: "console-session-end",
      activationId: null,
      licenseId: null,
      outcome: "ok" as const,
      error: null,
      actor: "cli",
    };
    expect((await staff.end(a.session.id, line)).subject).toBe("linus");
    expect(await staff.find(a.secret, "console")).toBeNull();
    expect(await sessions.find(b.secret, "console")).not.toBeNull();
    expect((await site.composed.store.listAudit({ ref: "ref_end" }))[0]?.actor).toBe("cli");
    await expect(staff.end(a.session.id, { ...line, ref: "ref_end2" })).rejects.toMatchObject({ code: "not_found" });
    await expect(staff.end("cs_nothing", { ...line, ref: "ref_end3" })).rejects.toMatchObject({ code: "not_found" });
  });
});
