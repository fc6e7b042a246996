import { expect, test } from "bun:test";
import { asksForHelp, COMMANDS, helpOf, subcommandsOf } from "../../src/cli/commands";
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

// Issue 33: `keyturn license --help` and `release sign --help` answered "unknown command". Every
// command of the CLI's own table answers --help on stdout (a process each); every subcommand its
// usage names gets its own usage from the same helpOf main.ts answers with.
test("--help works on every command of the CLI's table: its usage on stdout, exit 0", async () => {
  const names = Object.keys(COMMANDS);
  expect(names).toContain("license");
  for (let i = 0; i < names.length; i += 4) {
    await Promise.all(
      names.slice(i, i + 4).map(async (name) => {
        const r = await runCli([name, "--help"]);
        expect({ name, code: r.code, stderr: r.stderr }).toEqual({ name, code: 0, stderr: "" });
        expect(r.stdout).toContain(name === "serve" ? "--base-url" : `usage: keyturn ${name}`);
      }),
    );
  }
}, 60_000);

test("every subcommand's --help is its own usage line", () => {
  let subcommands = 0;
  for (const [name, command] of Object.entries(COMMANDS)) {
    if (name === "serve") continue;
    for (const sub of subcommandsOf(name, command.usage)) {
      subcommands++;
      const help = helpOf(name, [sub, "--help"]);
      expect(help).toStartWith(`usage: keyturn ${name} `);
      expect(help).toMatch(new RegExp(`^usage: keyturn ${name} [a-z|-]*\\b${sub}\\b`));
    }
  }
  expect(subcommands).toBeGreaterThan(20);
});

test("a subcommand's --help shows its own usage line; -h is the same; after `--` it is an argument", async () => {
  const sign = await runCli(["release", "sign", "--help"]);
  expect(sign.stdout.trim().split("\n")).toHaveLength(1);
  expect(sign.stdout).toContain("keyturn release sign --key");
  expect((await runCli(["license", "rekey", "-h"])).stdout).toStartWith("usage: keyturn license rekey ");
  expect((await runCli(["license", "--help"])).stdout.split("\n").filter((l) => l.includes("keyturn license ")).length).toBe(
    subcommandsOf("license", COMMANDS.license!.usage).length,
  );
  // A usage that continues on further lines is shown whole, and only its own.
  const make = (await runCli(["release", "make", "--help"])).stdout;
  expect(make).toContain("--velopack-package-id ID");
  expect(make).not.toContain("release push");
  expect(asksForHelp(["show", "--", "--help"])).toBe(false);
}, 30_000);
