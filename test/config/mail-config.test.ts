import { afterAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { toConfig } from "../../src/config/config";
import { ConfigError } from "../../src/config/parse";
import { BASE_URL, tempDir } from "../helpers";
import { runCli, siteArgs, siteDirs } from "../processes";

// Issue 30: "An SMTP setting (URL with TLS/STARTTLS and credentials from the environment ...)".
const dir = tempDir();
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const config = (settings: Record<string, string>) => toConfig({ variant: "alpha", "base-url": BASE_URL, data: join(dir, "data"), ...settings }, "admin");

function refusal(settings: Record<string, string>): ConfigError {
  try {
    config(settings);
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error(`accepted ${JSON.stringify(settings)}`);
}

const FROM = { "mail-from": "Example Software <licences@example.com>" };

test("no --smtp-url: no mail; credentials alone are refused", () => {
  expect(config({}).mail).toBeNull();
  expect(refusal({ "smtp-password": "secret" }).setting).toBe("smtp-password");
});

test("smtp:// requires STARTTLS except on a loopback address; smtps:// is TLS from the first byte; ports default to 587 and 465", () => {
  expect(config({ "smtp-url": "smtp://smtp.example.com", ...FROM }).mail).toMatchObject({
    host: "smtp.example.com",
    port: 587,
    implicitTls: false,
    requireStartTls: true,
  });
  expect(config({ "smtp-url": "smtp://127.0.0.1:2525", ...FROM }).mail).toMatchObject({ port: 2525, requireStartTls: false });
  expect(config({ "smtp-url": "smtps://smtp.example.com", ...FROM }).mail).toMatchObject({ port: 465, implicitTls: true, requireStartTls: false });
  expect(config({ "smtp-url": "smtp://smtp.example.com", ...FROM, "smtp-username": "u", "smtp-password": "p" }).mail).toMatchObject({
    username: "u",
    password: "p",
  });
});

test("credentials in the URL, another scheme, a missing or forged From, a lone user name are refused, naming the setting and never the secret", () => {
  const inUrl = refusal({ "smtp-url": "smtp://user:hunter2@smtp.example.com", ...FROM });
  expect(inUrl.setting).toBe("smtp-url");
  expect(inUrl.message).toContain("KEYTURN_SMTP_PASSWORD");
  expect(inUrl.message).not.toContain("hunter2");
  expect(refusal({ "smtp-url": "http://smtp.example.com", ...FROM }).setting).toBe("smtp-url");
  expect(refusal({ "smtp-url": "smtp://smtp.example.com" }).setting).toBe("mail-from");
  expect(refusal({ "smtp-url": "smtp://smtp.example.com", "mail-from": "a@example.com\r\nBcc: victim@example.org" }).setting).toBe("mail-from");
  expect(refusal({ "smtp-url": "smtp://smtp.example.com", ...FROM, "smtp-username": "u" }).setting).toBe("smtp-password");
  expect(refusal({ "smtp-url": "smtp://smtp.example.com", ...FROM, "mail-reminder-days": "400" }).setting).toBe("mail-reminder-days");
});

test("a bad mail setting makes serve exit 2 with one line naming it", async () => {
  const dirs = siteDirs(join(dir, "site"), "alpha");
  const r = await runCli(["serve", ...siteArgs("alpha", dirs), "--smtp-url", "smtp://u:p@smtp.example.com", "--mail-from", "a@example.com"]);
  expect(r.code).toBe(2);
  expect(r.stderr.trim().split("\n")).toHaveLength(1);
  expect(r.stderr).toContain("smtp-url");
});
