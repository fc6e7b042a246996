import { parseArgs, type ParseArgsConfig, type ParseArgsOptionsConfig } from "node:util";

/**
 * node:util's parseArgs, except that a string flag always takes the next argument as its value, as
 * getopt does. parseArgs refuses `--device -Qx…` as "ambiguous", yet device hashes are base64url
 * and one in 64 begins with "-" (support pastes them as they are), as may a licensee's name or a
 * note. `--` still ends the flags.
 */
export function parseArguments<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  return parseArgs<T>({ ...config, args: joinStringValues(config.args ?? [], config.options ?? {}) });
}

/** `--name value` as `--name=value` for each string flag, so a value beginning with "-" is read as the value. */
export function joinStringValues(args: readonly string[], options: ParseArgsOptionsConfig): string[] {
  const joined: string[] = [];
  for (let at = 0; at < args.length; at++) {
    const arg = args[at]!;
    if (arg === "--") {
      joined.push(...args.slice(at));
      break;
    }
    const name = arg.startsWith("--") && !arg.includes("=") ? arg.slice(2) : null;
    if (name !== null && Object.hasOwn(options, name) && options[name]!.type === "string" && at + 1 < args.length) {
      joined.push(`${arg}=${args[++at]!}`);
      continue;
    }
    joined.push(arg);
  }
  return joined;
}
