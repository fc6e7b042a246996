import { afterAll } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readSettings, toConfig } from "../../src/config/config";
import { ConfigError } from "../../src/config/parse";
import { BASE_URL, tempDir } from "../helpers";

/**
 * Configurations read from TOML files the way every command reads them (`--config FILE`), each file
 * an alpha site's with the lines given, in a folder removed after the test file. `refusal` is the
 * ConfigError such lines give, as `setting: message`.
 */
export function tomlFiles() {
  const dir = tempDir();
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  let files = 0;
  const configOf = (toml: string, env: Record<string, string> = {}) => {
    const path = join(dir, `keyturn-${++files}.toml`);
    writeFileSync(path, `variant = "alpha"\nbase-url = "${BASE_URL}"\ndata = "${join(dir, "data")}"\n${toml}`);
    const read = readSettings(["--config", path], env);
    return toConfig(read.settings, "admin", read.tables);
  };
  const refusal = (toml: string): string => {
    try {
      configOf(toml);
    } catch (e) {
      if (e instanceof ConfigError) return `${e.setting}: ${e.message}`;
      throw e;
    }
    throw new Error(`accepted ${toml}`);
  };
  return { dir, configOf, refusal };
}
