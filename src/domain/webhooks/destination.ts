import { BlockList, isIP } from "node:net";
import { KeyturnError } from "../errors";

/**
 * Where webhooks may go. A webhook URL is chosen by whoever holds a webhooks:write token, and what
 * an attempt records (status, time taken) would otherwise let them probe the site's own network.
 * So a destination must be public: a host name under a public suffix-like name (not single-label,
 * not localhost, .local, .internal, ...), https, and at connection time every address the name
 * resolves to a globally routable one. The operator names exceptions (`--webhook-allow-hosts`): an
 * allowed name may resolve anywhere and may use http; an allowed address may be reached by any name.
 */
export interface DestinationPolicy {
  /** Lower-case host names and canonical IP addresses (no brackets), from `--webhook-allow-hosts`. */
  readonly allowHosts: readonly string[];
}

export const NO_EXCEPTIONS: DestinationPolicy = { allowHosts: [] };

const URL_MAX = 2000;

/** Names that only mean something inside a network (RFC 6761, RFC 8375 and common private suffixes). */
const INTERNAL_SUFFIXES = ["localhost", "local", "internal", "localdomain", "lan", "home", "intranet", "corp", "private", "home.arpa", "arpa"];

const notGlobal = new BlockList();
for (const [net, bits] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const)
  notGlobal.addSubnet(net, bits, "ipv4");
// Addresses that embed an IPv4 address (embeddedIPv4) are checked as that address instead.
for (const [net, bits] of [
  ["64:ff9b:1::", 48],
  ["100::", 64],
  ["2001::", 23],
  ["2001:db8::", 32],
  ["2002::", 16],
] as const)
  notGlobal.addSubnet(net, bits, "ipv6");
/** Outside 2000::/3 nothing is global unicast (::1, ::, fc00::/7, fe80::/10, ff00::/8 ...). */
const globalUnicast = new BlockList();
globalUnicast.addSubnet("2000::", 3, "ipv6");

/** Host as written in a URL or the setting, comparable: lower case, no brackets, no trailing dot. */
export function normalHost(host: string): string {
  return host
    .toLowerCase()
    .replace(/^\[|\]$/g, "")
    .replace(/\.$/, "");
}

/** An IPv6 address's eight 16-bit groups (URL's parser canonicalises it first: a dotted tail becomes two groups); null if it is none. */
function ipv6Groups(address: string): number[] | null {
  let canonical: string;
  try {
    canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return null;
  }
  const groupsOf = (text: string) => (text === "" ? [] : text.split(":").map((g) => parseInt(g, 16)));
  const [head = "", tail] = canonical.split("::");
  const first = groupsOf(head);
  const last = tail === undefined ? [] : groupsOf(tail);
  const groups = tail === undefined ? first : [...first, ...new Array<number>(8 - first.length - last.length).fill(0), ...last];
  return groups.length === 8 ? groups : null;
}

/**
 * The IPv4 address an IPv6 address stands for, in the forms that carry one in their last 32 bits:
 * IPv4-mapped `::ffff:a.b.c.d` (RFC 4291 §2.5.5.2), SIIT's IPv4-translated `::ffff:0:a.b.c.d`
 * (RFC 6145, RFC 6052 §2.1) and NAT64's well-known prefix `64:ff9b::a.b.c.d` (RFC 6052 §2.1); else null.
 * A private or loopback address in any of them is refused as that IPv4 address is.
 */
export function embeddedIPv4(address: string): string | null {
  const groups = ipv6Groups(address);
  if (groups === null) return null;
  const prefix = groups.slice(0, 6).join(":");
  if (prefix !== "0:0:0:0:0:65535" && prefix !== "0:0:0:0:65535:0" && prefix !== "100:65435:0:0:0:0") return null;
  const [high, low] = [groups[6]!, groups[7]!];
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

/** A globally routable unicast address (text form, as DNS or a URL gives it). */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return !notGlobal.check(address, "ipv4");
  if (family === 6) {
    const v4 = embeddedIPv4(address);
    if (v4 !== null) return !notGlobal.check(v4, "ipv4");
    return globalUnicast.check(address, "ipv6") && !notGlobal.check(address, "ipv6");
  }
  return false;
}

function isInternalName(host: string): boolean {
  if (!host.includes(".")) return true;
  return INTERNAL_SUFFIXES.some((s) => host === s || host.endsWith("." + s));
}

export const isAllowedHost = (policy: DestinationPolicy, host: string): boolean => policy.allowHosts.includes(normalHost(host));

/**
 * A webhook URL as stored: https to a public name or address, or any http(s) host the operator
 * allowed. The URL parser has already turned decimal, octal and hex IPv4 forms into dotted ones.
 */
export function checkEndpointUrl(value: unknown, policy: DestinationPolicy): string {
  const bad = (why: string) => new KeyturnError("invalid_request", `url ${why}.`);
  if (typeof value !== "string" || value.length === 0 || value.length > URL_MAX) throw bad(`must be a string of at most ${URL_MAX} characters`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw bad("is not a URL");
  }
  if (url.username || url.password) throw bad("must not carry credentials");
  if (url.protocol !== "https:" && url.protocol !== "http:") throw bad("must be https");
  const host = normalHost(url.hostname);
  if (isAllowedHost(policy, host)) return url.href;
  if (url.protocol !== "https:") throw bad("must be https (http only to a host the operator allowed with --webhook-allow-hosts)");
  if (isIP(host) ? !isPublicAddress(host) : isInternalName(host))
    throw bad(`must name a public host (${host} is internal; the operator may allow it with --webhook-allow-hosts)`);
  return url.href;
}

/** Why a resolved destination is refused, or null: every address must be public or allowed. */
export function refusedAddresses(policy: DestinationPolicy, addresses: readonly string[]): string | null {
  if (addresses.length === 0) return "no address";
  const refused = addresses.filter((a) => !isPublicAddress(a) && !isAllowedHost(policy, a));
  return refused.length > 0 ? refused.join(", ") : null;
}
