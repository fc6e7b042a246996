import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { executeAgain, ownCommandLine, servingReexecution, TOP_TIER_OPTION } from "../../src/cli/engine-options";
import { generateKeyFiles } from "../../src/domain/keys";
import { executable, untilListening } from "../executable";
import { tempDir } from "../helpers";

const EXE = "/opt/vendor/keyturn";
const LINE = [EXE, "serve", "--variant", "alpha", "--port", "8443"];

describe("servingReexecution", () => {
  test("serve executes the same file with the same arguments, the environment kept and the top tier turned off", () => {
    const again = servingReexecution("serve", LINE, EXE, { PATH: "/usr/bin", KEYTURN_DATA: "/var/lib/keyturn", UNSET: undefined });
    expect(again).toEqual({
      file: EXE,
      argv: LINE,
      env: { PATH: "/usr/bin", KEYTURN_DATA: "/var/lib/keyturn", [TOP_TIER_OPTION]: "0" },
    });
  });

  test("run from the sources, bun executes the script again", () => {
    const line = ["bun", "src/main.ts", "serve", "--demo"];
    expect(servingReexecution("serve", line, "/usr/local/bin/bun", {})).toEqual({
      file: "/usr/local/bin/bun",
      argv: line,
      env: { [TOP_TIER_OPTION]: "0" },
    });
  });

  test("an environment that sets the option, either way, is the operator's choice: nothing is executed again", () => {
    expect(servingReexecution("serve", LINE, EXE, { [TOP_TIER_OPTION]: "1" })).toBeNull();
    expect(servingReexecution("serve", LINE, EXE, { [TOP_TIER_OPTION]: "0" })).toBeNull();
  });

  test("only serve: the other commands are short and run as they are", () => {
    for (const command of ["license", "release", "migrate", undefined])
      expect(servingReexecution(command, [EXE, ...(command ? [command] : [])], EXE, {})).toBeNull();
  });

  test("without its own command line (no /proc) the process runs as it is", () => {
    expect(servingReexecution("serve", null, EXE, {})).toBeNull();
  });

  test("a file the process may not execute leaves it running as it is, and writes no warning", () => {
    const again = servingReexecution("serve", LINE, EXE, {})!;
    const emitWarning = process.emitWarning;
    const asked: string[] = [];
    const refused = executeAgain(again, (file) => {
      asked.push(file);
      process.emitWarning("process.execve is an experimental feature");
      throw Object.assign(new Error(`EACCES, Permission denied '${file}'`), { code: "EACCES" });
    });
    expect(refused).toBe(false);
    expect(asked).toEqual([EXE]);
    expect(process.emitWarning).toBe(emitWarning);
    expect(
      executeAgain(null, () => {
        throw new Error("not called");
      }),
    ).toBe(false);
  });

  test("ownCommandLine reads this process's argv as executed", () => {
    const line = ownCommandLine();
    expect(line).not.toBeNull();
    expect(line![0]).toContain("bun");
    expect(line!.length).toBeGreaterThan(1);
  });
});

describe("the compiled executable", () => {
  const dir = tempDir("keyturn-engine-");
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, "releases"));
  generateKeyFiles(join(dir, "keys"), "gamma-license-2026-09");

  async function serve(env: Record<string, string>): Promise<{ environment: string[]; healthy: number }> {
    const proc = Bun.spawn(
      [
        await executable(),
        "serve",
        "--variant",
        "gamma",
        "--base-url",
        "https://licenses.example.com",
        "--data",
        join(dir, `data-${Object.keys(env).length}`),
        "--keys",
        join(dir, "keys"),
        "--releases",
        join(dir, "releases"),
        "--port",
        "0",
      ],
      { stdout: "ignore", stderr: "pipe", env: { ...process.env, [TOP_TIER_OPTION]: undefined, ...env } },
    );
    try {
      const { url } = await untilListening(proc.stderr.getReader());
      // The environment of the process id that was spawned, as it runs now: execve replaced the one
      // it was started with, in place.
      const environment = readFileSync(`/proc/${proc.pid}/environ`, "utf8").split("\0");
      return { environment, healthy: (await fetch(`${url}/api/v1/health`)).status };
    } finally {
      proc.kill("SIGTERM");
      await proc.exited;
    }
  }

  test("serve runs in the process it was started as, with the engine's top tier off", async () => {
    const { environment, healthy } = await serve({});
    expect(environment).toContain(`${TOP_TIER_OPTION}=0`);
    expect(healthy).toBe(200);
  });

  test("an operator's setting of the option is kept as given", async () => {
    const { environment, healthy } = await serve({ [TOP_TIER_OPTION]: "1" });
    expect(environment).toContain(`${TOP_TIER_OPTION}=1`);
    expect(environment).not.toContain(`${TOP_TIER_OPTION}=0`);
    expect(healthy).toBe(200);
  });
});
