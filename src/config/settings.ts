import { MAX_DURATION, MAX_RATE_WINDOW } from "./parse";

/**
 * Every setting of `keyturn serve` (and of the admin commands that share them): its flag, what it
 * means and its default. Each also reads `KEYTURN_<FLAG>` and the TOML key of the same name.
 * This table is the only place a default is written: `toConfig`, the commands that read a few
 * settings on their own (`keys generate`, `release check`), `keyturn serve --help` and
 * docs/configuration.md (src/config/reference.ts) all take theirs from it.
 */
export interface SettingSpec {
  readonly flag: string;
  readonly kind: "string" | "boolean";
  readonly default?: string;
  readonly help: string;
}

/**
 * Upper bounds of durations (every other duration: parse.ts's MAX_DURATION, ten years). A token
 * lives at most a year and a day: past that an installation that never refreshes is not worth a
 * signature that cannot be taken back. Shutdown waits at most an hour (timers overflow at 24.8 days,
 * and a longer wait would fire at once); an issuer's max_age of more than a year means none.
 */
export const MAX_TOKEN_TTL = "366d";
export const MAX_SHUTDOWN_TIMEOUT = "1h";
export const MAX_IDENTITY_MAX_AGE = "366d";

export type Environment = Readonly<Record<string, string | undefined>>;

export const SETTINGS: readonly SettingSpec[] = [
  { flag: "variant", kind: "string", help: "alpha, beta or gamma (required; the demo defaults to alpha)" },
  {
    flag: "channels",
    kind: "string",
    default: "stable,preview",
    help: "the site's update channels (comma-separated, lower-case words and dashes); the spec's stable,preview unless a site adds its own",
  },
  {
    flag: "platforms",
    kind: "string",
    default: "win-x64",
    help: "the site's platforms (comma-separated, e.g. win-x64,mac-arm64,linux-x64); the spec's win-x64 unless a site adds its own",
  },
  {
    flag: "base-url",
    kind: "string",
    help: "the site's public https address (also behind a TLS proxy): the iss of every token, the origin of the console's forms and cookies (required; plain http only on a loopback address)",
  },
  { flag: "data", kind: "string", default: "./data", help: "directory of the SQLite records" },
  { flag: "database", kind: "string", help: "postgres://... URL; records in PostgreSQL instead of --data" },
  { flag: "keys", kind: "string", default: "./keys", help: "directory of <kid>.pem signing keys" },
  { flag: "releases", kind: "string", default: "./releases", help: "root of the release tree" },
  { flag: "host", kind: "string", default: "127.0.0.1", help: "address to listen on" },
  { flag: "port", kind: "string", default: "8080", help: "port to listen on" },
  { flag: "tls-cert", kind: "string", help: "PEM certificate (chain); serve HTTPS itself" },
  { flag: "tls-key", kind: "string", help: "PEM private key of --tls-cert" },
  { flag: "allow-plain-http", kind: "boolean", default: "false", help: "allow plain HTTP on a non-loopback --host (behind a TLS proxy)" },
  { flag: "token-ttl", kind: "string", default: "7d", help: `lifetime of entitlement tokens, at most ${MAX_TOKEN_TTL} (never past the license's expiry)` },
  {
    flag: "offline-token-ttl",
    kind: "string",
    default: MAX_TOKEN_TTL,
    help: `lifetime of an offline activation's answer (a computer that cannot refresh), at most ${MAX_TOKEN_TTL}; never past the license's expiry, and a license's own token lifetime wins`,
  },
  { flag: "token-cache-size", kind: "string", default: "10000", help: "verified tokens kept in memory (0 turns the cache off)" },
  {
    flag: "rate-limit-signin",
    kind: "string",
    default: "20/60s",
    help: `activate, challenge, exchange: requests per window (at most ${MAX_RATE_WINDOW}) per address`,
  },
  { flag: "rate-limit-api", kind: "string", default: "600/60s", help: `every other endpoint: requests per window (at most ${MAX_RATE_WINDOW}) per address` },
  {
    flag: "rate-limit-admin",
    kind: "string",
    default: "600/60s",
    help: `the admin API (/api/v1/admin/...): requests per window (at most ${MAX_RATE_WINDOW}) per address`,
  },
  {
    flag: "rate-limit-console-signin",
    kind: "string",
    default: "120/60s",
    help: `the console's sign-in (admin token, the OpenID issuer's start and callback): requests per window (at most ${MAX_RATE_WINDOW}) per address, apart from the sign-in budget so that customers guessing keys behind the staff's address cannot lock staff out`,
  },
  { flag: "rate-limit-store", kind: "string", help: "redis://... to share rate limits between processes" },
  { flag: "trust-proxy", kind: "string", default: "", help: "CIDRs of proxies whose X-Forwarded-For is believed" },
  { flag: "identity-issuer", kind: "string", help: "OpenID issuer URL of staff sign-in" },
  { flag: "identity-client-id", kind: "string", help: "client id registered at the issuer" },
  { flag: "identity-groups", kind: "string", default: "", help: "groups allowed to sign in (comma-separated)" },
  { flag: "identity-groups-claim", kind: "string", default: "groups", help: "ID token claim that lists the groups" },
  { flag: "identity-max-age", kind: "string", default: "600s", help: `maximum age of the sign-in at the issuer, at most ${MAX_IDENTITY_MAX_AGE}` },
  { flag: "identity-mfa-values", kind: "string", default: "mfa", help: "amr values that count as a second factor" },
  { flag: "identity-scopes", kind: "string", default: "openid,profile,email", help: "scopes the program asks the issuer for" },
  {
    flag: "console-groups",
    kind: "string",
    default: "",
    help: 'console sign-in with the issuer: groups and the scopes each gives, "support=licenses:read,activations:write;admins=admin" (applied to open staff sessions at their next request)',
  },
  { flag: "staff-organization", kind: "string", default: "Staff", help: "organization of staff entitlements" },
  { flag: "staff-seats", kind: "string", default: "5", help: "installations per staff member" },
  {
    flag: "trial-plan",
    kind: "string",
    help: "a plan of the configuration ([plans.NAME]) that trials without a key are made from (POST /api/v1/trials/start); trials are off when unset",
  },
  { flag: "trial-length", kind: "string", default: "14d", help: "how long a trial lasts from its start, at most 366d" },
  { flag: "trial-meters", kind: "string", help: "meters a trial's licence gets, e.g. exports=50,credits=100/1d (NAME=LIMIT[/PERIOD]); none when unset" },
  { flag: "audit-retention", kind: "string", default: "90d", help: `how long audit lines are kept, at most ${MAX_DURATION}` },
  { flag: "log-format", kind: "string", default: "json", help: "json or text" },
  { flag: "log-level", kind: "string", default: "info", help: "debug, info, warn or error" },
  { flag: "idle-timeout", kind: "string", default: "10s", help: "close a connection that sends or takes nothing this long (at most 255s)" },
  {
    flag: "shutdown-timeout",
    kind: "string",
    default: "10s",
    help: `on SIGTERM/SIGINT, how long in-flight requests may take to finish, at most ${MAX_SHUTDOWN_TIMEOUT}`,
  },
  { flag: "metrics-listen", kind: "string", help: "HOST:PORT of a separate listener serving GET /metrics (Prometheus text format); off when unset" },
  {
    flag: "webhook-allow-hosts",
    kind: "string",
    default: "",
    help: "host names and addresses webhooks may reach although internal (comma-separated; also over http)",
  },
  {
    flag: "public-lanes",
    kind: "string",
    default: "",
    help: "lanes answered without a bearer token (free, demo or trial builds): product/channel, comma-separated (gamma: channel); their manifest, installers, feeds and /download page",
  },
  { flag: "mirror-of", kind: "string", help: "serve as a mirror of this vendor site (its https address): its tokens, a copied release tree" },
  { flag: "mirror-token", kind: "string", help: "admin token (kta_..., scope feed:read) of the vendor's feed; a secret: prefer the environment" },
  { flag: "mirror-poll", kind: "string", default: "30s", help: "how often a mirror reads the vendor's feed" },
  { flag: "mirror-max-staleness", kind: "string", help: "a mirror this long without news of its vendor answers bearer requests 503 (default off)" },
  {
    flag: "mirror-max-entries",
    kind: "string",
    default: "4000000",
    help: "revocations, licence expiries and release controls a mirror keeps at most (on disk); past it, bearer requests answer 503",
  },
  {
    flag: "smtp-url",
    kind: "string",
    help: "smtp://host[:587] (STARTTLS, required unless the server is on a loopback address) or smtps://host[:465] (TLS) of the server that sends the site's mail; no mail is sent when unset (docs/mail.md)",
  },
  { flag: "smtp-username", kind: "string", help: "user name at the SMTP server; a secret: prefer the environment" },
  { flag: "smtp-password", kind: "string", help: "password at the SMTP server; a secret: prefer the environment (KEYTURN_SMTP_PASSWORD)" },
  { flag: "smtp-ca", kind: "string", help: "PEM file of certificate authorities trusted for the SMTP server besides the system's" },
  { flag: "mail-from", kind: "string", help: 'From of the site\'s mail, e.g. "Example Software <licences@example.com>" (required with --smtp-url)' },
  {
    flag: "mail-reminder-days",
    kind: "string",
    default: "14",
    help: "how many days before a licence expires (and before its updates window ends) its holder is reminded by mail; 0: no reminders",
  },
  { flag: "mail-timeout", kind: "string", default: "30s", help: "one attempt to hand a mail to the SMTP server takes at most this long (at most 10m)" },
  { flag: "demo", kind: "boolean", default: "false", help: "development keys, a demo license and the example releases" },
  {
    flag: "stripe-webhook-secret",
    kind: "string",
    help: "the signing secret (whsec_...) of the Stripe webhook endpoint that calls /api/v1/hooks/stripe; the Stripe bridge is off when unset; a secret: prefer the environment",
  },
  {
    flag: "paddle-webhook-secret",
    kind: "string",
    help: "the secret key (pdl_ntfset_...) of the Paddle notification destination that calls /api/v1/hooks/paddle; the Paddle bridge is off when unset; a secret: prefer the environment",
  },
  {
    flag: "lemonsqueezy-webhook-secret",
    kind: "string",
    help: "the signing secret of the Lemon Squeezy webhook that calls /api/v1/hooks/lemonsqueezy; the Lemon Squeezy bridge is off when unset; a secret: prefer the environment",
  },
  {
    flag: "bridge-products",
    kind: "string",
    help: 'what a product sold through a bridge grants: a TOML table [bridge-products.PROVIDER."ID"] (plan, seats, channels, expiresAfter, grace, onRefund, onDispute, onCancel), or the same as JSON; see docs/commerce.md',
  },
];

export function envName(flag: string): string {
  return `KEYTURN_${flag.toUpperCase().replaceAll("-", "_")}`;
}

/** The environment variable naming the TOML file, when `--config` is not given. */
export const CONFIG_FILE_ENV = envName("config");

const BY_FLAG = new Map(SETTINGS.map((s) => [s.flag, s]));

export function settingSpec(flag: string): SettingSpec {
  const spec = BY_FLAG.get(flag);
  if (!spec) throw new Error(`no setting --${flag} in SETTINGS`);
  return spec;
}

/** The table's default of a setting that has one (an empty string counts). */
export function settingDefault(flag: string): string {
  const value = settingSpec(flag).default;
  if (value === undefined) throw new Error(`setting --${flag} has no default in SETTINGS`);
  return value;
}

/**
 * One setting's value: the flag over `KEYTURN_<FLAG>` over the TOML file over the table's default.
 * Every read of a setting from the environment goes through here.
 */
export function resolveSetting(
  flag: string,
  sources: { readonly given?: string; readonly env: Environment; readonly file?: Readonly<Record<string, string>> },
): string | undefined {
  return sources.given ?? sources.env[envName(flag)] ?? sources.file?.[flag] ?? settingSpec(flag).default;
}
