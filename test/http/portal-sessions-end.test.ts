import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { offlineRequestCode } from "../../src/client/offline";
import { CLI_CALLER } from "../../src/domain/admin/deps";
import { rekeyLicense, revokeLicense } from "../../src/domain/admin/licenses";
import { BASE_URL, createLicense, device, testSite, type TestSite } from "../helpers";

// Issue 33, item 2: a portal session opened with a leaked key survived `license rekey` (and revoke)
// for up to 30 minutes; in it the old key's holder made an offline answer and freed the customer's
// seat. Rekey and revoke end that licence's portal sessions in their own transaction.
const ORIGIN = new URL(BASE_URL).origin;
const FORM = { "content-type": "application/x-www-form-urlencoded", origin: ORIGIN };

let site: TestSite;
beforeEach(async () => {
  site = await testSite("alpha");
});
afterEach(() => site.close());

const send = (path: string, cookie: string, body?: Record<string, string>) =>
  site.app.handle(
    new Request(
      `${BASE_URL}${path}`,
      body ? { method: "POST", headers: { ...FORM, cookie }, body: new URLSearchParams(body).toString() } : { headers: { cookie } },
    ),
  );

/** A portal session opened with `key`: its cookie and its form token. */
async function portalSession(key: string): Promise<{ cookie: string; csrf: string }> {
  const signedIn = await send("/portal/sign-in", "", { key });
  expect(signedIn.status).toBe(303);
  const cookie = signedIn.headers.get("set-cookie")!.split(";")[0]!;
  const csrf = /name="csrf" value="([0-9a-f]{64})"/.exec(await (await send("/portal/", cookie)).text())![1]!;
  return { cookie, csrf };
}

/** The session is over: the sign-in page, no answer code, the seat not freed. */
async function expectEnded(response: Response): Promise<void> {
  const text = await response.text();
  expect(response.status).toBe(401);
  expect(text).toContain("Your sign-in has ended");
  expect(text).not.toContain('id="answer-code"');
}

describe.each([
  ["rekey", (id: string) => rekeyLicense(site.composed.services.admin, CLI_CALLER, id)],
  ["revoke", (id: string) => revokeLicense(site.composed.services.admin, CLI_CALLER, id)],
] as const)("license %s", (_name, change) => {
  test("ends the licence's portal sessions at once: an offline answer and a deactivation are refused after", async () => {
    const { key, license } = await createLicense(site);
    const other = await createLicense(site);
    const activated = await site.request("POST", "/licenses/activate", { body: { key, device: device("alpha") } });
    expect(activated.status).toBe(200);
    const [activation] = await site.composed.store.listActivations(license.id);
    const leaked = await portalSession(key);
    const bystander = await portalSession(other.key);
    // Before the change the session works: an offline answer is given.
    const before = await send("/portal/offline", leaked.cookie, { csrf: leaked.csrf, code: offlineRequestCode({ key, device: device("alpha") }) });
    expect(await before.text()).toContain('id="answer-code"');

    const changed = await change(license.id);
    // A request code with the licence's current key (after a rekey, the new one): only the ended session refuses it.
    const currentKey = "key" in changed ? changed.key : key;
    await expectEnded(
      await send("/portal/offline", leaked.cookie, { csrf: leaked.csrf, code: offlineRequestCode({ key: currentKey, device: device("alpha") }) }),
    );
    await expectEnded(await send(`/portal/installations/${activation!.id}/deactivate`, leaked.cookie, { csrf: leaked.csrf }));
    expect((await site.composed.store.listActivations(license.id)).find((a) => a.id === activation!.id)?.deactivated).toBeNull();
    expect(await (await send("/portal/", leaked.cookie)).text()).not.toContain(leaked.csrf);
    // Another licence's session is untouched.
    expect(await (await send("/portal/", bystander.cookie)).text()).toContain(bystander.csrf);
  });
});
