import { readFileSync } from "node:fs";
import { isLoopbackHost } from "./config";
import { ConfigError, parseDuration, parseInteger, parseUrl } from "./parse";

/** How the site sends mail (--smtp-url and the settings beside it); null in Config when mail is off. */
export interface MailConfig {
  readonly host: string;
  readonly port: number;
  /** smtps: TLS from the first byte; smtp: STARTTLS, required unless the server is on a loopback address. */
  readonly implicitTls: boolean;
  readonly requireStartTls: boolean;
  /** Secrets: from the environment by preference, never logged. */
  readonly username: string | null;
  readonly password: string | null;
  /** Certificate authorities (PEM) trusted for the server besides the system's. */
  readonly ca: string | null;
  /** The From header: `Name <address>` or an address. */
  readonly from: string;
  /** Days before a licence's end (or its updates window's) its holder is reminded; 0: never. */
  readonly reminderDays: number;
  /** One SMTP attempt (connecting included) at most this long. */
  readonly timeoutMs: number;
}

/** A From header: an address, or a display name and an address in angle brackets; no line breaks. */
const FROM = /^(?:[^<>\r\n\u0000-\u001f]{0,120}<[^<>\s@]{1,64}@[^<>\s@]{1,253}>|[^<>\s@]{1,64}@[^<>\s@]{1,253})$/;

/** The mail settings; null when --smtp-url is not given (nothing is mailed). */
export function mailConfig(get: (flag: string) => string | undefined, value: (flag: string) => string): MailConfig | null {
  const urlText = get("smtp-url");
  const username = get("smtp-username") ?? null;
  const password = get("smtp-password") ?? null;
  if (!urlText) {
    if (username || password) throw new ConfigError(username ? "smtp-username" : "smtp-password", "goes with --smtp-url");
    return null;
  }
  const url = parseUrl("smtp-url", urlText, ["smtp:", "smtps:"]);
  // Credentials in the URL would be shown wherever the URL is (a process list, a config dump).
  if (url.username || url.password)
    throw new ConfigError("smtp-url", "must not hold credentials: give KEYTURN_SMTP_USERNAME and KEYTURN_SMTP_PASSWORD in the environment");
  if ((url.pathname && url.pathname !== "/") || url.search || url.hash) throw new ConfigError("smtp-url", "must be smtp://host[:port] or smtps://host[:port]");
  if (!!username !== !!password) throw new ConfigError(username ? "smtp-password" : "smtp-username", "--smtp-username and --smtp-password go together");
  const implicitTls = url.protocol === "smtps:";
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const from = get("mail-from");
  if (!from) throw new ConfigError("mail-from", 'required with --smtp-url: the From of the site\'s mail, e.g. "Example Software <licences@example.com>"');
  if (!FROM.test(from)) throw new ConfigError("mail-from", "must be an address, or a name and <address>");
  const caFile = get("smtp-ca");
  let ca: string | null = null;
  if (caFile) {
    try {
      ca = readFileSync(caFile, "utf8");
    } catch {
      throw new ConfigError("smtp-ca", `${caFile} is not a readable file`);
    }
  }
  return {
    host,
    port: url.port ? Number(url.port) : implicitTls ? 465 : 587,
    implicitTls,
    // Mail holds licence keys and sign-in links: never in clear past this machine.
    requireStartTls: !implicitTls && !isLoopbackHost(host),
    username,
    password,
    ca,
    from,
    reminderDays: parseInteger("mail-reminder-days", value("mail-reminder-days"), 0, 365),
    timeoutMs: parseDuration("mail-timeout", value("mail-timeout"), "10m") * 1000,
  };
}
