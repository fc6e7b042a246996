import { afterAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { tempDir } from "../helpers";
import { runCli, siteArgs, siteDirs } from "../processes";

// Issue 30: a licence made at the command line is mailed (written to the outbox for the serving
// process), and the outbox is read and a mail sent again from the command line as in the console.
const root = tempDir();
afterAll(() => rmSync(root, { recursive: true, force: true }));

test("license create --email writes the mail; mail list shows it (never its text); mail resend queues a copy; without --smtp-url mail refuses", async () => {
  const dirs = siteDirs(root, "alpha");
  const site = siteArgs("alpha", dirs);
  const mail = ["--smtp-url", "smtp://127.0.0.1:2525", "--mail-from", "licences@example.com"];
  const created = await runCli([
    "license",
    "create",
    ...site,
    ...mail,
    "--licensee",
    "Ada",
    "--plan",
    "pro",
    "--seats",
    "1",
    "--channels",
    "stable",
    "--email",
    "ada@example.org",
    "--json",
  ]);
  expect(created.code).toBe(0);
  const { key } = JSON.parse(created.stdout) as { key: string };

  const listed = await runCli(["mail", "list", ...site, ...mail, "--json"]);
  expect(listed.code).toBe(0);
  expect(listed.stdout).not.toContain(key);
  const { mails } = JSON.parse(listed.stdout) as { mails: { id: string; kind: string; recipient: string; status: string }[] };
  expect(mails).toEqual([expect.objectContaining({ kind: "license-created", recipient: "ada@example.org", status: "pending" })]);

  const resent = await runCli(["mail", "resend", mails[0]!.id, ...site, ...mail]);
  expect(resent.code).toBe(0);
  expect(resent.stdout).toContain(`a copy of ${mails[0]!.id}`);
  const audit = await runCli(["audit", ...site, "--json"]);
  expect(audit.stdout).toContain("mail-resend");

  const off = await runCli(["mail", "list", ...site]);
  expect(off.code).not.toBe(0);
  expect(off.stderr).toContain("This site sends no mail");
  expect((await runCli(["mail", "frobnicate", ...site])).code).toBe(2);
});
