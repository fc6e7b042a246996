import { describe, expect, test } from "bun:test";
import { parseArguments } from "../../src/config/arguments";

const options = { device: { type: "string" }, license: { type: "string" }, json: { type: "boolean" } } as const;
const parse = (...args: string[]) => parseArguments({ args, options, allowPositionals: true, strict: true });

describe("arguments", () => {
  test("a string flag takes the next argument as its value even when it begins with '-' (one device hash in 64 does)", () => {
    expect(parse("--device", "-Qx9_a", "--license", "lic_1").values).toEqual({ device: "-Qx9_a", license: "lic_1" });
    expect(parse("--device", "--license").values).toEqual({ device: "--license" });
  });

  test("--name=value, boolean flags, positionals and '--' read as node:util's parseArgs reads them", () => {
    expect(parse("--device=-a", "--json", "act_1")).toMatchObject({ values: { device: "-a", json: true }, positionals: ["act_1"] });
    expect(parse("--", "--device", "-a").positionals).toEqual(["--device", "-a"]);
    expect(parse("act_1", "--json", "--device", "x").values).toEqual({ json: true, device: "x" });
  });

  test("what parseArgs refuses is still refused: an unknown flag, a value for a boolean, a string flag with nothing after it", () => {
    expect(() => parse("--nope")).toThrow("Unknown option '--nope'");
    expect(() => parse("--json=yes")).toThrow();
    expect(() => parse("--device")).toThrow("argument missing");
  });
});
