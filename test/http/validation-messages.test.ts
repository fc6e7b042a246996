import { afterAll, beforeAll, expect, test } from "bun:test";
import { CLI_CALLER } from "../../src/domain/admin/deps";
import { createAdminToken } from "../../src/domain/admin/tokens";
import { testSite, type TestSite } from "../helpers";

// Issue 25 item 8: a refused body names the field and says what is wrong in plain words (Elysia's
// body validator decides; keyturn words the answer). Never "foo must be a JSON object" for an unknown
// field, never "a integer", never "events.0 is not valid".

let site: TestSite;
let token: string;
beforeAll(async () => {
  site = await testSite("alpha");
  token = (await createAdminToken(site.composed.services.admin, CLI_CALLER, { name: "messages", scopes: ["admin"] })).secret;
});
afterAll(() => site.close());

const license = { licensee: "Ada", organization: "Engines", plan: "pro", planTitle: "Pro", seats: 3, channels: ["stable"] };

async function messageOf(method: string, path: string, body: unknown): Promise<string> {
  const res = await site.request(method, path, { token, body });
  const answer = (await res.json()) as { ok: boolean; error: string; message: string };
  expect({ status: res.status, error: answer.error }).toEqual({ status: 400, error: "invalid_request" });
  expect(Object.keys(answer).sort()).toEqual(["error", "message", "ok", "ref"]);
  return answer.message;
}

test("an unknown field is named as unknown, whatever its value", async () => {
  expect(await messageOf("POST", "/admin/licenses", { ...license, foo: { a: 1 } })).toBe("foo is not a known field.");
  expect(await messageOf("POST", "/admin/licenses", { ...license, foo: 1 })).toBe("foo is not a known field.");
});

test("a wrongly typed field says what it must be, with the right article", async () => {
  expect(await messageOf("POST", "/admin/licenses", { ...license, seats: "3" })).toBe("seats must be an integer.");
  expect(await messageOf("POST", "/admin/licenses", { ...license, licensee: 7 })).toBe("licensee must be a string.");
  expect(await messageOf("POST", "/admin/licenses", { ...license, channels: "stable" })).toBe("channels must be an array.");
});

test("a value outside a list of allowed values names the item and the values allowed", async () => {
  const message = await messageOf("POST", "/admin/webhooks", { url: "https://hooks.example/k", events: ["license.nope"] });
  expect(message).toStartWith("events.0 must be one of: ");
  expect(message).toContain('"license.created"');
  expect(message).not.toContain("is not valid");
});

test("a body that is JSON but not an object, and a field out of range, are worded plainly", async () => {
  expect(await messageOf("POST", "/admin/licenses", [license])).toBe("The body must be a JSON object.");
  expect(await messageOf("POST", "/admin/licenses", null)).toBe("The body must be a JSON object.");
  expect(await messageOf("POST", "/admin/licenses", { ...license, seats: 0 })).toBe("seats must be at least 1.");
});
