import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createAdminToken } from "../../src/domain/admin/tokens";
import { CLI_CALLER } from "../../src/domain/admin/deps";
import { CONSOLE_SESSION_MS, ConsoleSessions, PENDING_SIGN_IN_MS, PORTAL_SESSION_MS } from "../../src/domain/console-sessions";
import { testClock, testSite, type TestSite } from "../helpers";

// The session service over a real SQLite store, with the clock injected: expiry, kinds, revocation.
let site: TestSite;
let sessions: ConsoleSessions;
const clock = testClock();

beforeAll(async () => {
  site = await testSite("alpha", { clock });
  sessions = new ConsoleSessions({ store: site.composed.store, clock });
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
    expect(await sessions.find(secret.replace(/.$/, (c) => (c === "0" ? "1" : "0")), "console")).toBeNull();
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
    await expect(sessions.signInStaff("eve", "Eve", [])).rejects.toMatchObject({ code: "not_in_required_group" });
  });
});
