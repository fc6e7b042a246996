import { isIP } from "node:net";

/** Parsers for the textual forms settings take in flags, environment and TOML. */

export class ConfigError extends Error {
  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(message);
    this.name = "ConfigError";
  }
}

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };

/**
 * The longest any duration setting may be unless its own maximum is lower: ten years. 999999999w
 * would otherwise be accepted, and a time computed from it (now plus the duration) is past what a
 * Date can hold.
 */
export const MAX_DURATION = "3660d";

/** `90`, `90s`, `10m`, `12h`, `7d`, `2w` → seconds; at most `max` (written the way a setting is). */
export function parseDuration(setting: string, text: string, max = MAX_DURATION): number {
  const seconds = durationSeconds(setting, text);
  if (seconds > durationSeconds(setting, max)) throw new ConfigError(setting, `must be at most ${max} (got "${text}")`);
  return seconds;
}

function durationSeconds(setting: string, text: string): number {
  const m = /^(\d{1,9})([smhdw]?)$/.exec(text.trim());
  if (!m) throw new ConfigError(setting, `malformed duration "${text}" (use e.g. 600s, 10m, 12h, 7d)`);
  const seconds = Number(m[1]) * UNIT_SECONDS[m[2] || "s"]!;
  if (seconds <= 0) throw new ConfigError(setting, `duration must be positive (got "${text}")`);
  return seconds;
}

export interface Rate {
  readonly limit: number;
  readonly windowSeconds: number;
}

/** The longest rate window: its reset time goes to clients as Retry-After. */
export const MAX_RATE_WINDOW = "1d";

/** `20/60s`, `600/1m` → { limit, windowSeconds }. */
export function parseRate(setting: string, text: string): Rate {
  const m = /^(\d{1,9})\/(.+)$/.exec(text.trim());
  if (!m || Number(m[1]) <= 0) throw new ConfigError(setting, `malformed rate "${text}" (use e.g. 20/60s: requests per window)`);
  return { limit: Number(m[1]), windowSeconds: parseDuration(setting, m[2]!, MAX_RATE_WINDOW) };
}

export function parseInteger(setting: string, text: string, min: number, max: number): number {
  if (!/^\d{1,9}$/.test(text.trim())) throw new ConfigError(setting, `expected a whole number (got "${text}")`);
  const n = Number(text);
  if (n < min || n > max) throw new ConfigError(setting, `must be between ${min} and ${max} (got ${n})`);
  return n;
}

export function parseBoolean(setting: string, text: string): boolean {
  const t = text.trim().toLowerCase();
  if (["1", "true", "yes", "on", ""].includes(t)) return true;
  if (["0", "false", "no", "off"].includes(t)) return false;
  throw new ConfigError(setting, `expected true or false (got "${text}")`);
}

export function parseList(text: string): string[] {
  return text
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

export function parseUrl(setting: string, text: string, protocols: string[]): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(setting, `not a URL: "${text}"`);
  }
  if (!protocols.includes(url.protocol))
    throw new ConfigError(
      setting,
      `must be ${protocols.length === 1 && protocols[0] === "https:" ? "an" : "a"} ${protocols.map((p) => p.replace(":", "")).join(" or ")} URL (got "${text}")`,
    );
  return url;
}

/** An IPv4 or IPv6 CIDR (a bare address counts as a /32 or /128). Validated here, matched in http/. */
export function parseCidr(setting: string, text: string): string {
  const [addr = "", bits, extra] = text.trim().split("/");
  const family = isIP(addr);
  const max = family === 4 ? 32 : 128;
  if (family === 0 || extra !== undefined || (bits !== undefined && !(/^\d{1,3}$/.test(bits) && Number(bits) <= max)))
    throw new ConfigError(setting, `not an address or CIDR: "${text}"`);
  return text.trim();
}

const HOST_NAME = /^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

/** A host name or IP address as a URL's hostname gives it: lower case, IPv6 canonical and without brackets, no trailing dot. */
export function parseHost(setting: string, text: string): string {
  const t = text
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, "")
    .replace(/\.$/, "");
  if (isIP(t) === 6) return new URL(`http://[${t}]/`).hostname.slice(1, -1);
  if (isIP(t) === 4 || HOST_NAME.test(t)) return t;
  throw new ConfigError(setting, `not a host name or address: "${text}"`);
}
