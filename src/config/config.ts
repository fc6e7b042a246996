import { accessSync, constants, existsSync, mkdirSync, readFileSync, statSync } from "node:fs";
import type { ParseArgsOptionsConfig } from "node:util";
import { parseArguments } from "./arguments";
import { isIP } from "node:net";
import { isLaneWord, LANE_LIST_MAX, LANE_WORD_MAX, VARIANTS, withLanes, type Variant, type VariantName } from "./variants";
import {
  CONFIG_FILE_ENV,
  envName,
  MAX_IDENTITY_MAX_AGE,
  MAX_SHUTDOWN_TIMEOUT,
  MAX_TOKEN_TTL,
  resolveSetting,
  settingDefault,
  SETTINGS,
  type Environment,
} from "./settings";
import { bridgeConfig, type BridgeConfig } from "./bridges";
import { mailConfig, type MailConfig } from "./mail-config";
import { ConfigError, parseBoolean, parseCidr, parseDuration, parseHost, parseInteger, parseList, parseRate, parseUrl, type Rate } from "./parse";
import { parsePlans, type Plans } from "./plans";
import { trialConfig, type TrialConfig } from "./trial";

export interface IdentityConfig {
  readonly issuer: string;
  readonly clientId: string;
  readonly groups: readonly string[];
  readonly groupsClaim: string;
  readonly maxAgeSeconds: number;
  readonly mfaValues: readonly string[];
  readonly scopes: readonly string[];
  /** Console sign-in with the issuer: each group and the admin scopes it gives (empty: the console takes tokens only). */
  readonly consoleGroups: ReadonlyMap<string, readonly string[]>;
}

/** A mirror's vendor and how it follows the vendor's feed. */
export interface MirrorConfig {
  /** The vendor's address, normalised as --base-url is: the `iss` of the tokens a mirror accepts. */
  readonly of: string;
  /** The vendor's admin token (scope feed:read). A secret: never logged. */
  readonly token: string;
  readonly pollMs: number;
  /** null: never refuse for staleness. */
  readonly maxStalenessSeconds: number | null;
  /** Entries kept at most; past it, bearer requests answer 503 (src/domain/mirror/follower.ts). */
  readonly maxEntries: number;
}

export interface Config {
  readonly variant: Variant;
  readonly baseUrl: string;
  readonly dataDir: string;
  readonly databaseUrl: string | null;
  readonly keysDir: string;
  readonly releasesDir: string;
  readonly host: string;
  readonly port: number;
  readonly tls: { readonly certFile: string; readonly keyFile: string } | null;
  readonly allowPlainHttp: boolean;
  readonly tokenTtlSeconds: number;
  /** The lifetime of an offline activation's token (--offline-token-ttl). */
  readonly offlineTokenTtlSeconds: number;
  readonly tokenCacheSize: number;
  readonly rateLimit: { readonly signin: Rate; readonly api: Rate; readonly admin: Rate; readonly console: Rate; readonly store: string | null };
  readonly trustProxy: readonly string[];
  /** null when staff sign-in is off (issuer, client id and groups are all needed to switch it on). */
  readonly identity: IdentityConfig | null;
  readonly staffOrganization: string;
  readonly staffSeats: number;
  readonly auditRetentionSeconds: number;
  readonly logFormat: "json" | "text";
  readonly logLevel: "debug" | "info" | "warn" | "error";
  /** Bun.serve idleTimeout: a connection with no traffic this long is closed (slow clients). */
  readonly idleTimeoutSeconds: number;
  /** How long a shutdown waits for in-flight requests before closing their connections. */
  readonly shutdownTimeoutSeconds: number;
  /** Where GET /metrics is served (a listener of its own), or null when metrics are off. */
  readonly metricsListen: { readonly host: string; readonly port: number } | null;
  /** Hosts (names and canonical addresses) webhooks may reach although internal. */
  readonly webhookAllowHosts: readonly string[];
  /** Lanes answered without a bearer (--public-lanes): `product/channel`, gamma `channel`. */
  readonly publicLanes: readonly string[];
  readonly demo: boolean;
  /** null unless this site is a mirror of a vendor's site. */
  readonly mirror: MirrorConfig | null;
  /** null when no --smtp-url is given: nothing is mailed. */
  readonly mail: MailConfig | null;
  /** The TOML file's `[plans.NAME]` tables (plans.ts); empty without. */
  readonly plans: Plans;
  /** Trials without a key (--trial-plan, --trial-length); null when off. */
  readonly trial: TrialConfig | null;
  /** The commerce bridges: their secrets and the products they sell (src/config/bridges.ts). */
  readonly bridges: BridgeConfig;
}

export type Mode = "serve" | "admin";

export interface ReadSettings {
  /** Merged setting values: flag over environment over TOML file over default. */
  readonly settings: Readonly<Record<string, string | undefined>>;
  /** Values of command-specific flags (not settings). */
  readonly flags: Readonly<Record<string, string | boolean | undefined>>;
  readonly positionals: readonly string[];
  /** The settings given by a flag or the environment (not by the file or a default). */
  readonly explicit: ReadonlySet<string>;
  /** The TOML file's tables that are not settings (TOML_TABLES), as parsed; toConfig checks them. */
  readonly tables: Readonly<Record<string, unknown>>;
}

/**
 * Reads flags, `KEYTURN_*` environment and the optional `--config` TOML file into plain strings.
 * `extra` declares the command's own flags (e.g. `--json`); they are not settings, even one named
 * like a setting.
 */
export function readSettings(args: readonly string[], env: Environment, extra: ParseArgsOptionsConfig = {}): ReadSettings {
  const options: ParseArgsOptionsConfig = { config: { type: "string" } };
  for (const s of SETTINGS) options[s.flag] = { type: s.kind };
  Object.assign(options, extra);
  let parsed;
  try {
    parsed = parseArguments({ args: [...args], options, allowPositionals: true, strict: true });
  } catch (e) {
    throw new ConfigError("arguments", (e as Error).message.split("\n")[0]!);
  }
  const values = parsed.values as Record<string, string | boolean | undefined>;
  const configFile = (values.config as string | undefined) ?? env[CONFIG_FILE_ENV];
  const { settings: file, tables } = configFile ? readToml(configFile) : { settings: {}, tables: {} };

  const settings: Record<string, string | undefined> = {};
  const explicit = new Set<string>();
  for (const s of SETTINGS) {
    // A command's own flag of a setting's name (`license create --channels`: the licence's) is the
    // command's; that setting then comes from the environment, the file or its default.
    const fromFlag = Object.hasOwn(extra, s.flag) ? undefined : values[s.flag];
    const given = fromFlag === undefined ? undefined : String(fromFlag);
    settings[s.flag] = resolveSetting(s.flag, { given, env, file });
    if (given !== undefined || env[envName(s.flag)] !== undefined) explicit.add(s.flag);
  }
  const flags: Record<string, string | boolean | undefined> = {};
  for (const name of Object.keys(extra)) flags[name] = values[name];
  return { settings, flags, positionals: parsed.positionals, explicit, tables };
}

/** The TOML file's tables that hold more than one value (not settings: no flag or environment variable). */
export const TOML_TABLES: readonly string[] = ["plans"];

function readToml(path: string): { settings: Record<string, string>; tables: Record<string, unknown> } {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    throw new ConfigError("config", `cannot read ${path}`);
  }
  let doc: Record<string, unknown>;
  try {
    doc = Bun.TOML.parse(text) as Record<string, unknown>;
  } catch (e) {
    throw new ConfigError("config", `${path} is not valid TOML: ${(e as Error).message}`);
  }
  const known = new Set(SETTINGS.map((s) => s.flag));
  const out: Record<string, string> = {};
  const tables: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(doc)) {
    if (TOML_TABLES.includes(key)) tables[key] = value;
    else if (!known.has(key)) throw new ConfigError("config", `${path}: unknown setting "${key}"`);
    // A table of a setting (bridge-products) is kept as JSON text, the form its flag and environment variable take.
    else out[key] = Array.isArray(value) ? value.join(",") : typeof value === "object" && value !== null ? JSON.stringify(value) : String(value);
  }
  return { settings: out, tables };
}

/**
 * A site's channels or platforms (--channels, --platforms): 1 to LANE_LIST_MAX distinct names, each
 * a lower-case word or words joined by dashes (they become directories and URL segments).
 */
export function parseLaneList(flag: "channels" | "platforms", text: string): string[] {
  const list = parseList(text);
  if (list.length === 0 || list.length > LANE_LIST_MAX) throw new ConfigError(flag, `must list 1 to ${LANE_LIST_MAX} names`);
  const bad = list.find((name) => !isLaneWord(name));
  if (bad !== undefined)
    throw new ConfigError(flag, `"${bad}" is not a name of lower-case letters and digits joined by dashes (at most ${LANE_WORD_MAX} characters)`);
  if (new Set(list).size !== list.length) throw new ConfigError(flag, "names a value twice");
  return list;
}

/**
 * Validates the merged settings once, into one frozen object. Throws ConfigError naming the setting.
 * A setting missing or blank in `settings` takes its default from SETTINGS (so tests may pass only
 * the settings they care about).
 */
export function toConfig(settings: Readonly<Record<string, string | undefined>>, mode: Mode, tables: Readonly<Record<string, unknown>> = {}): Config {
  const get = (flag: string) => settings[flag]?.trim() || undefined;
  const value = (flag: string) => get(flag) ?? settingDefault(flag);
  const demo = parseBoolean("demo", value("demo"));

  const variantName = get("variant") ?? (demo ? "alpha" : undefined);
  if (!variantName) throw new ConfigError("variant", "required: alpha, beta or gamma");
  if (!Object.hasOwn(VARIANTS, variantName)) throw new ConfigError("variant", `unknown variant "${variantName}" (use alpha, beta or gamma)`);
  const variant = withLanes(VARIANTS[variantName as VariantName], {
    channels: parseLaneList("channels", value("channels")),
    platforms: parseLaneList("platforms", value("platforms")),
  });

  const port = parseInteger("port", value("port"), 0, 65535);
  // The demo serves plain HTTP on this machine: its public origin is the address its banner prints.
  const demoHost = isLoopbackHost(value("host")) ? (isIP(value("host")) === 6 ? `[${value("host")}]` : value("host")) : "localhost";
  const defaultBaseUrl = demo && !get("tls-cert") ? `http://${demoHost}:${port}` : demo || mode === "admin" ? `https://localhost:${port}` : undefined;
  const baseUrlText = get("base-url") ?? defaultBaseUrl;
  if (!baseUrlText) throw new ConfigError("base-url", "required: the site's https address, e.g. https://updates.example.com");
  const baseUrl = parseBaseUrl(baseUrlText);

  const databaseUrl = get("database") ?? null;
  if (databaseUrl) parseUrl("database", databaseUrl, ["postgres:", "postgresql:"]);
  const dataDir = value("data");
  if (!databaseUrl) ensureWritableDir("data", dataDir);
  const keysDir = value("keys");
  const releasesDir = value("releases");
  if (mode === "serve" && !demo) {
    requireReadableDir("keys", keysDir);
    requireReadableDir("releases", releasesDir);
  }

  const host = value("host");
  const certFile = get("tls-cert");
  const keyFile = get("tls-key");
  if (!!certFile !== !!keyFile) throw new ConfigError(certFile ? "tls-key" : "tls-cert", "--tls-cert and --tls-key go together");
  if (certFile) requireReadableFile("tls-cert", certFile);
  if (keyFile) requireReadableFile("tls-key", keyFile);
  const allowPlainHttp = parseBoolean("allow-plain-http", value("allow-plain-http"));
  if (mode === "serve" && !certFile && !allowPlainHttp && !isLoopbackHost(host))
    throw new ConfigError("host", `plain HTTP on ${host} needs --allow-plain-http (for a TLS-terminating proxy), or give --tls-cert and --tls-key`);

  const rateStore = get("rate-limit-store") ?? null;
  if (rateStore) parseUrl("rate-limit-store", rateStore, ["redis:", "rediss:"]);

  const logFormat = value("log-format");
  if (logFormat !== "json" && logFormat !== "text") throw new ConfigError("log-format", `must be json or text (got "${logFormat}")`);
  const logLevel = value("log-level");
  if (!["debug", "info", "warn", "error"].includes(logLevel)) throw new ConfigError("log-level", `must be debug, info, warn or error (got "${logLevel}")`);

  const plans = parsePlans(tables.plans, variant.channels);
  const config: Config = {
    variant,
    baseUrl,
    dataDir,
    databaseUrl,
    keysDir,
    releasesDir,
    host,
    port,
    tls: certFile && keyFile ? { certFile, keyFile } : null,
    allowPlainHttp,
    tokenTtlSeconds: parseDuration("token-ttl", value("token-ttl"), MAX_TOKEN_TTL),
    offlineTokenTtlSeconds: parseDuration("offline-token-ttl", value("offline-token-ttl"), MAX_TOKEN_TTL),
    tokenCacheSize: parseInteger("token-cache-size", value("token-cache-size"), 0, 10_000_000),
    rateLimit: {
      signin: parseRate("rate-limit-signin", value("rate-limit-signin")),
      api: parseRate("rate-limit-api", value("rate-limit-api")),
      admin: parseRate("rate-limit-admin", value("rate-limit-admin")),
      console: parseRate("rate-limit-console-signin", value("rate-limit-console-signin")),
      store: rateStore,
    },
    trustProxy: parseList(value("trust-proxy")).map((c) => parseCidr("trust-proxy", c)),
    identity: identityConfig(get, value),
    staffOrganization: value("staff-organization"),
    staffSeats: parseInteger("staff-seats", value("staff-seats"), 1, 1000),
    auditRetentionSeconds: parseDuration("audit-retention", value("audit-retention")),
    logFormat,
    logLevel: logLevel as Config["logLevel"],
    idleTimeoutSeconds: idleTimeout(value("idle-timeout")),
    shutdownTimeoutSeconds: parseDuration("shutdown-timeout", value("shutdown-timeout"), MAX_SHUTDOWN_TIMEOUT),
    metricsListen: listenAddress("metrics-listen", get("metrics-listen")),
    webhookAllowHosts: parseList(value("webhook-allow-hosts")).map((h) => parseHost("webhook-allow-hosts", h)),
    publicLanes: parsePublicLanes(variant, value("public-lanes")),
    demo,
    mirror: mirrorConfig(get, databaseUrl !== null),
    plans,
    trial: trialConfig(get("trial-plan"), value("trial-length"), plans, get("trial-meters")),
    bridges: bridgeConfig(get, variant.channels, plans),
    mail: mailConfig(get, value),
  };
  return deepFreeze(config);
}

/**
 * --public-lanes: `product/channel` names (gamma, without products: `channel`) of the site's
 * products and channels, each once.
 */
function parsePublicLanes(variant: Variant, text: string): string[] {
  const lanes = parseList(text);
  for (const lane of lanes) {
    const parts = lane.split("/");
    const [product, channel] = variant.products.length > 0 ? parts : [null, ...parts];
    const ok =
      parts.length === (variant.products.length > 0 ? 2 : 1) &&
      (product === null || variant.products.includes(product!)) &&
      variant.channels.includes(channel!);
    if (!ok)
      throw new ConfigError(
        "public-lanes",
        `"${lane.slice(0, 80)}" is not ${variant.products.length > 0 ? `product/channel of ${variant.products.join(", ")} and ${variant.channels.join(", ")}` : `a channel of ${variant.channels.join(", ")}`}`,
      );
  }
  if (new Set(lanes).size !== lanes.length) throw new ConfigError("public-lanes", "names a lane twice");
  return lanes;
}

/** Bun accepts 1 to 255 seconds. */
function idleTimeout(text: string): number {
  const seconds = parseDuration("idle-timeout", text);
  if (seconds > 255) throw new ConfigError("idle-timeout", `must be at most 255s (got "${text}")`);
  return seconds;
}

function identityConfig(get: (flag: string) => string | undefined, value: (flag: string) => string): IdentityConfig | null {
  const issuer = get("identity-issuer");
  const clientId = get("identity-client-id");
  const groups = parseList(value("identity-groups"));
  const maxAgeSeconds = parseDuration("identity-max-age", value("identity-max-age"), MAX_IDENTITY_MAX_AGE);
  if (!issuer || !clientId || groups.length === 0) return null;
  const url = parseUrl("identity-issuer", issuer, ["https:", "http:"]);
  if (url.protocol === "http:" && !isLoopbackHost(url.hostname))
    throw new ConfigError("identity-issuer", "must be https (plain http only on a loopback address, for tests)");
  return {
    issuer,
    clientId,
    groups,
    groupsClaim: value("identity-groups-claim"),
    maxAgeSeconds,
    mfaValues: parseList(value("identity-mfa-values")),
    scopes: parseList(value("identity-scopes")),
    consoleGroups: consoleGroups(value("console-groups")),
  };
}

/** `group=scope,scope;group=scope`: which admin scopes a staff member's groups give in the console. */
function consoleGroups(text: string): ReadonlyMap<string, readonly string[]> {
  const map = new Map<string, readonly string[]>();
  for (const entry of text
    .split(";")
    .map((e) => e.trim())
    .filter(Boolean)) {
    const eq = entry.indexOf("=");
    const group = entry.slice(0, eq).trim();
    const scopes = parseList(entry.slice(eq + 1));
    if (eq <= 0 || group.length === 0 || scopes.length === 0)
      throw new ConfigError("console-groups", `each entry is group=scope,scope (got "${entry.slice(0, 80)}")`);
    map.set(group, scopes);
  }
  return map;
}

const MIRROR_TOKEN = /^kta_[A-Za-z0-9_-]{32,200}$/;

/** The mirror settings (also read by `keyturn mirror check`); null when --mirror-of is not given. */
export function mirrorConfig(get: (flag: string) => string | undefined, postgres: boolean): MirrorConfig | null {
  const of = get("mirror-of");
  const token = get("mirror-token");
  if (!of) {
    if (token) throw new ConfigError("mirror-token", "goes with --mirror-of (the vendor site the token is for)");
    return null;
  }
  const url = parseUrl("mirror-of", of, ["https:", "http:"]);
  if (url.protocol === "http:" && !isLoopbackHost(url.hostname))
    throw new ConfigError("mirror-of", "must be https (plain http only on a loopback address, for tests)");
  if (url.search || url.hash || url.username || url.password)
    throw new ConfigError("mirror-of", "must be the vendor's plain address (no query, fragment or credentials)");
  // Never echo the value: it is a secret.
  if (!token) throw new ConfigError("mirror-token", "required with --mirror-of: the vendor's admin token with scope feed:read (KEYTURN_MIRROR_TOKEN)");
  if (!MIRROR_TOKEN.test(token)) throw new ConfigError("mirror-token", "not an admin token (kta_ followed by at least 32 characters)");
  if (postgres) throw new ConfigError("database", "a mirror keeps what it learns from its vendor in SQLite (--data): leave out --database");
  const maxStaleness = get("mirror-max-staleness");
  return {
    of: url.href.replace(/\/+$/, ""),
    token,
    pollMs: durationMs("mirror-poll", get("mirror-poll") ?? "30s"),
    maxStalenessSeconds: maxStaleness ? parseDuration("mirror-max-staleness", maxStaleness) : null,
    maxEntries: parseInteger("mirror-max-entries", get("mirror-max-entries") ?? "4000000", 1000, 100_000_000),
  };
}

/** A duration that may also be given in milliseconds (`250ms`), as milliseconds. */
function durationMs(setting: string, text: string): number {
  const ms = /^(\d{1,9})ms$/.exec(text.trim());
  if (!ms) return parseDuration(setting, text) * 1000;
  const n = Number(ms[1]);
  if (n < 50) throw new ConfigError(setting, `must be at least 50ms (got "${text}")`);
  return n;
}

/**
 * --base-url: https, or plain http on a loopback address (a site tried on one's own machine: the
 * demo, the browser tests). It is the site's public origin (site-origin.ts) and the tokens' iss.
 */
function parseBaseUrl(text: string): string {
  const url = parseUrl("base-url", text, ["https:", "http:"]);
  if (url.protocol === "http:" && !isLoopbackHost(url.hostname)) throw new ConfigError("base-url", `must be an https URL (got "${text}")`);
  return url.href.replace(/\/+$/, "");
}

export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "");
  return h === "localhost" || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

function requireReadableDir(setting: string, dir: string): void {
  let ok = false;
  try {
    ok = statSync(dir).isDirectory();
    accessSync(dir, constants.R_OK | constants.X_OK);
  } catch {
    ok = false;
  }
  if (!ok) throw new ConfigError(setting, `${dir} is not a readable directory`);
}

function requireReadableFile(setting: string, file: string): void {
  try {
    accessSync(file, constants.R_OK);
  } catch {
    throw new ConfigError(setting, `${file} is not a readable file`);
  }
}

function ensureWritableDir(setting: string, dir: string): void {
  try {
    if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: 0o700 });
    accessSync(dir, constants.R_OK | constants.W_OK | constants.X_OK);
    if (!statSync(dir).isDirectory()) throw new Error();
  } catch {
    throw new ConfigError(setting, `${dir} is not a writable directory`);
  }
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === "object" && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}

/** HOST:PORT (IPv6 in brackets); null when unset. */
function listenAddress(setting: string, text: string | undefined): { host: string; port: number } | null {
  if (text === undefined) return null;
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:\[\]]+):(\d+)$/.exec(text);
  if (!m) throw new ConfigError(setting, `must be HOST:PORT, e.g. 127.0.0.1:9464 (got "${text}")`);
  return { host: m[1]!.replace(/^\[|\]$/g, ""), port: parseInteger(setting, m[2]!, 0, 65535) };
}
