import { afterAll, beforeAll, expect, test } from "bun:test";
import { CLI_CALLER } from "../../src/domain/admin/deps";
import { createAdminToken } from "../../src/domain/admin/tokens";
import { testSite, type TestSite } from "../helpers";

/** The admin API's date-time fields (expires, since) are read over HTTP: RFC 3339 accepted, anything else refused. */
let site: TestSite;
let token: string;
beforeAll(async () => {
  site = await testSite("alpha");
  ({ secret: token } = await createAdminToken(site.composed.services.admin, CLI_CALLER, { name: "t", scopes: ["admin"] }));
});
afterAll(() => site.close());

const create = (expires: unknown) =>
  site.request("POST", "/admin/licenses", {
    token,
    body: { licensee: "A", organization: "O", plan: "p", planTitle: "P", seats: 1, channels: ["stable"], expires },
  });

test("expires is accepted as RFC 3339 with Z, an offset or a fraction, and set; other forms are invalid_request", async () => {
  for (const [sent, stored] of [
    ["2027-01-01T00:00:00Z", "2027-01-01T00:00:00+00:00"],
    ["2027-01-01T02:00:00+02:00", "2027-01-01T00:00:00+00:00"],
    ["2027-01-01T00:00:00.000Z", "2027-01-01T00:00:00+00:00"],
  ]) {
    const r = await create(sent);
    expect(r.status).toBe(201);
    const { license } = (await r.json()) as { license: { id: string; expires: string } };
    expect(license.expires).toBe(stored!);
    const patched = await site.request("PATCH", `/admin/licenses/${license.id}`, { token, body: { expires: "2028-06-01T00:00:00Z" } });
    expect(patched.status).toBe(200);
    expect(((await patched.json()) as { license: { expires: string } }).license.expires).toBe("2028-06-01T00:00:00+00:00");
  }
  for (const bad of ["2027-01-01", "tomorrow", "2027-13-01T00:00:00Z", "2027-01-01T00:00:00"]) {
    const r = await create(bad);
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: string }).error).toBe("invalid_request");
  }
});

test("the audit's since is read as a date-time", async () => {
  const r = await site.request("GET", `/admin/audit?since=${encodeURIComponent("2026-01-01T00:00:00Z")}`, { token });
  expect(r.status).toBe(200);
  expect((await site.request("GET", "/admin/audit?since=yesterday", { token })).status).toBe(400);
});
