import { expect, test } from "bun:test";
import { runCli } from "../processes";

// Issue 25: `keyturn --help` failed (unknown command, exit 2). It prints the commands and exits 0.
test("keyturn --help (and -h, help) lists every command and exits 0; an unknown command still exits 2", async () => {
  const usage = (await runCli(["nonsense"])).stderr;
  const commands = /usage: keyturn ([a-z|-]+) \.\.\./.exec(usage)![1]!.split("|");
  expect(commands).toContain("serve");
  for (const flag of ["--help", "-h", "help"]) {
    const r = await runCli([flag]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    for (const c of commands) expect(r.stdout).toMatch(new RegExp(`^  ${c} `, "m"));
  }
  expect((await runCli(["nonsense"])).code).toBe(2);
});
