import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { escapeControl } from "../../src/config/text";
import { systemClock } from "../../src/domain/clock";
import { ConsoleSessions } from "../../src/domain/console-sessions";
import { openSqliteStore } from "../../src/store/sqlite";
import { cliFolder } from "../processes";

const { cwd, keyturn, json } = cliFolder("keyturn-admin-cli-");

test("admin-token create shows the secret once and stores its hash; list shows no secret; revoke; bad scopes exit 1", () => {
  const created = json("admin-token", "create", "--name", "ci", "--scopes", "licenses:read,audit:read", "--expires", "2099-01-01T00:00:00Z");
  expect(created.secret).toMatch(/^kta_[A-Za-z0-9_-]{43}$/);
  expect(created.scopes).toEqual(["licenses:read", "audit:read"]);
  expect(readFileSync(join(cwd, "data", "keyturn.sqlite")).includes(Buffer.from(created.secret))).toBe(false);
  const list = json("admin-token", "list");
  expect(list.tokens.map((t: { id: string }) => t.id)).toEqual([created.id]);
  expect(JSON.stringify(list)).not.toContain(created.secret);
  expect(keyturn("admin-token", "revoke", created.id).code).toBe(0);
  expect(json("admin-token", "list").tokens[0].revoked).toMatch(/\+00:00$/);
  expect(keyturn("admin-token", "revoke", created.id).code).toBe(1);
  const bad = keyturn("admin-token", "create", "--name", "x", "--scopes", "root");
  expect(bad.code).toBe(1);
  expect(bad.stderr).toContain("invalid_request");
  expect(keyturn("admin-token", "create", "--name", "x").code).toBe(2);
}, 30_000);

test("a licence sold to a person: no --organization or --plan-title needed (none, and the plan's name)", () => {
  const lic = json("license", "create", "--licensee", "Ada", "--plan", "pro", "--seats", "1", "--channels", "stable");
  expect(lic).toMatchObject({ licensee: "Ada", organization: "", plan: "pro", planTitle: "pro" });
  expect(keyturn("license", "show", lic.id).stdout).toStartWith(`${lic.id}  Ada\n`);
  expect(keyturn("license", "create", "--plan", "pro", "--seats", "1", "--channels", "stable").code).toBe(2);
});

test("license update and reinstate; webhook add, list, deliveries, retry, rotate-secret, remove", () => {
  const lic = json(
    "license",
    "create",
    "--licensee",
    "Ada",
    "--organization",
    "E",
    "--plan",
    "pro",
    "--plan-title",
    "Pro",
    "--seats",
    "2",
    "--channels",
    "stable",
    "--email",
    "ada@e.example",
  );
  expect(lic.email).toBe("ada@e.example");
  const updated = json("license", "update", lic.key, "--seats", "5", "--plan-title", "Team", "--expires", "2099-01-01T00:00:00Z", "--email", "none");
  expect(updated).toMatchObject({ id: lic.id, planTitle: "Team", seats: { used: 0, total: 5 }, expires: "2099-01-01T00:00:00+00:00", email: null });
  expect(keyturn("license", "update", lic.id).code).toBe(2);
  expect(keyturn("license", "update", lic.id, "--seats", "0").code).toBeGreaterThan(0);
  expect(keyturn("license", "reinstate", lic.id).code).toBe(1);
  json("license", "revoke", lic.id);
  expect(json("license", "reinstate", lic.id).revoked).toBeNull();
  const audit = json("audit", "--license", lic.id);
  expect(JSON.stringify(audit)).toContain("license-reinstate");

  const hook = json("webhook", "add", "--url", "https://hooks.example/keyturn", "--events", "license.created,license.updated");
  expect(hook.secret).toMatch(/^whsec_/);
  expect(json("webhook", "list").endpoints).toEqual([expect.objectContaining({ id: hook.id, enabled: true, events: ["license.created", "license.updated"] })]);
  expect(JSON.stringify(json("webhook", "list"))).not.toContain(hook.secret);
  expect(keyturn("webhook", "add", "--url", "http://hooks.example/", "--events", "license.created").code).toBe(1);
  expect(json("webhook", "deliveries").deliveries).toEqual([]);
  expect(json("webhook", "deliveries", "--failed").deliveries).toEqual([]);
  expect(keyturn("webhook", "retry", "dlv_unknown").code).toBe(1);
  const rotated = json("webhook", "rotate-secret", hook.id);
  expect(rotated).toMatchObject({ id: hook.id, secret: expect.stringMatching(/^whsec_/) });
  expect(rotated.secret).not.toBe(hook.secret);
  expect(JSON.stringify(json("audit"))).toContain("webhook-rotate-secret");
  expect(keyturn("webhook", "rotate-secret", "whe_unknown").code).toBe(1);
  expect(keyturn("webhook", "remove", hook.id).code).toBe(0);
  expect(keyturn("webhook", "remove", hook.id).code).toBe(1);
  expect(keyturn("webhook", "frobnicate").code).toBe(2);
  // Twenty-odd spawned CLI runs: 30 s was reached on a loaded 2-core machine.
}, 60_000);

test("control characters: refused in names by the service, and escaped in any text output", () => {
  expect(escapeControl("Evil\u001b[2J\u0007 ok\n\tnext")).toBe("Evil\\x1b[2J\\x07 ok\\x0a\\x09next");
  const r = keyturn(
    "license",
    "create",
    "--licensee",
    "Evil\u001b[2J",
    "--organization",
    "E",
    "--plan",
    "p",
    "--plan-title",
    "P",
    "--seats",
    "1",
    "--channels",
    "stable",
  );
  // the service refuses control characters in names outright
  expect(r.code).toBe(1);
  expect(r.stderr).toContain("invalid_request");
});

test("console-sessions list shows the open console sessions without their secrets; end ends one at once", async () => {
  const token = json("admin-token", "create", "--name", "desk", "--scopes", "licenses:read");
  // A console sign-in as the running site makes it, into the same records.
  const store = openSqliteStore(join(cwd, "data"));
  const sessions = new ConsoleSessions({ store, clock: systemClock });
  try {
    const { secret, session } = await sessions.signInWithToken(token.secret);
    const listed = json("console-sessions", "list").sessions;
    expect(listed).toContainEqual(expect.objectContaining({ id: session.id, kind: "token", tokenId: token.id, name: "desk", scopes: ["licenses:read"] }));
    expect(JSON.stringify(listed)).not.toContain(secret);
    expect(keyturn("console-sessions", "list").stdout).toContain(`${session.id}  desk  token ${token.id}`);
    const ended = keyturn("console-sessions", "end", session.id);
    expect(ended.code).toBe(0);
    expect(ended.stdout).toBe(`ended ${session.id} (desk)\n`);
    expect(await sessions.find(secret, "console")).toBeNull();
    expect(json("audit", "--limit", "5").audit.some((l: { action: string; actor: string }) => l.action === "console-session-end" && l.actor === "cli")).toBe(
      true,
    );
    expect(keyturn("console-sessions", "end", session.id).code).toBe(1);
    expect(keyturn("console-sessions", "end").code).toBe(2);
    expect(keyturn("console-sessions", "nothing").code).toBe(2);
  } finally {
    await store.close();
  }
}, 30_000);
