import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { COMMANDS, subcommandsOf } from "../src/cli/commands";

// docs/examples/release-from-ci.yml is copied into vendors' repositories: every keyturn command it
// runs, and every flag it gives one, must be the CLI's own (COMMANDS, the table --help answers from).

const workflow = Bun.YAML.parse(readFileSync(join(import.meta.dir, "../docs/examples/release-from-ci.yml"), "utf8")) as {
  jobs: Record<string, { steps: { run?: string }[] }>;
};

/** A shell line's words, quotes taken off (enough for the workflow's plain command lines). */
function words(line: string): string[] {
  return [...line.matchAll(/"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]!);
}

/** The keyturn command lines of every run block, continuation lines joined. */
function keyturnCommands(): string[][] {
  const out: string[][] = [];
  for (const job of Object.values(workflow.jobs))
    for (const step of job.steps) {
      if (!step.run) continue;
      for (const line of step.run.replace(/\\\n\s*/g, " ").split("\n")) {
        const w = words(line.trim());
        if (w[0] === "keyturn") out.push(w);
      }
    }
  return out;
}

/** The usage lines of one subcommand, continuation lines included (they start with spaces and no `keyturn`). */
function usageOf(name: string, sub: string): string {
  const lines = COMMANDS[name]!.usage.split("\n");
  const own: string[] = [];
  let inside = false;
  for (const line of lines) {
    if (/^\s*keyturn /.test(line)) inside = subcommandsOf(name, line).includes(sub);
    if (inside) own.push(line);
  }
  return own.join("\n");
}

test("every keyturn command and flag in the example workflow exists in the CLI's COMMANDS", () => {
  const commands = keyturnCommands();
  expect(commands.map((w) => `${w[1]} ${w[2]}`)).toEqual(["release make", "release sign", "release push"]);
  for (const w of commands) {
    const [, name, sub, ...rest] = w;
    expect(Object.keys(COMMANDS)).toContain(name!);
    expect(subcommandsOf(name!, COMMANDS[name!]!.usage)).toContain(sub!);
    const usage = usageOf(name!, sub!);
    for (const flag of rest.filter((x) => x.startsWith("--")))
      expect({ sub, flag, known: new RegExp(`${flag}[\\s\\]=|]`).test(usage) }).toEqual({ sub, flag, known: true });
  }
});

test("the check itself refuses a flag the CLI does not have", () => {
  expect(new RegExp("--no-such-flag[\\s\\]=|]").test(usageOf("release", "push"))).toBe(false);
  expect(usageOf("release", "push")).toContain("--halted");
  expect(usageOf("release", "make")).not.toContain("--halted");
});
