/**
 * IP addresses as bytes: parsing, CIDR matching and the grouping rate limits count by. IPv4-mapped
 * IPv6 addresses (`::ffff:1.2.3.4`, what a dual-stack socket reports) are read as IPv4.
 */
export interface Ip {
  readonly bytes: Uint8Array;
  readonly v4: boolean;
}

export function parseIp(text: string): Ip | null {
  const t = text.trim();
  if (t.includes(":")) return parseV6(t.replace(/%.*$/, ""));
  const v4 = parseV4(t);
  return v4 ? { bytes: v4, v4: true } : null;
}

function parseV4(t: string): Uint8Array | null {
  const parts = t.split(".");
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) return null;
  return Uint8Array.from(parts.map(Number));
}

function parseV6(t: string): Ip | null {
  if (!/^[0-9a-fA-F:.]+$/.test(t) || t.split("::").length > 2) return null;
  let tail = t;
  let embedded: Uint8Array | null = null;
  const lastColon = t.lastIndexOf(":");
  if (t.slice(lastColon + 1).includes(".")) {
    embedded = parseV4(t.slice(lastColon + 1));
    if (!embedded) return null;
    tail = t.slice(0, lastColon + 1) + "0:0";
  }
  const [head, rest] = tail.split("::") as [string, string | undefined];
  const groups = (s: string) => (s === "" ? [] : s.split(":"));
  const left = groups(head);
  const right = rest === undefined ? [] : groups(rest);
  const missing = 8 - left.length - right.length;
  if ((rest === undefined && missing !== 0) || (rest !== undefined && missing < 1)) return null;
  const all = [...left, ...Array<string>(rest === undefined ? 0 : missing).fill("0"), ...right];
  if (!all.every((g) => /^[0-9a-fA-F]{1,4}$/.test(g))) return null;
  const bytes = new Uint8Array(16);
  all.forEach((g, i) => {
    const n = parseInt(g, 16);
    bytes[2 * i] = n >> 8;
    bytes[2 * i + 1] = n & 0xff;
  });
  if (embedded) bytes.set(embedded, 12);
  const mapped = bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
  return mapped ? { bytes: bytes.slice(12), v4: true } : { bytes, v4: false };
}

/** The canonical text of an address (IPv4 dotted, IPv6 per RFC 5952). */
export function formatIp(ip: Ip): string {
  if (ip.v4) return [...ip.bytes].join(".");
  const groups = Array.from({ length: 8 }, (_, i) => (ip.bytes[2 * i]! << 8) | ip.bytes[2 * i + 1]!);
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) [best, bestLen] = [i, j - i];
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best < 0) return hex.join(":");
  return `${hex.slice(0, best).join(":")}::${hex.slice(best + bestLen).join(":")}`;
}

/** What one client is counted as: its IPv4 address, or the /64 network of its IPv6 address. */
export function addressGroup(ip: Ip): string {
  if (ip.v4) return formatIp(ip);
  const prefix = new Uint8Array(16);
  prefix.set(ip.bytes.subarray(0, 8));
  return `${formatIp({ bytes: prefix, v4: false })}/64`;
}

/** A matcher for a list of CIDRs (config.trustProxy, validated there); a bare address is a /32 or /128. */
export function cidrMatcher(cidrs: readonly string[]): (ip: Ip) => boolean {
  const nets = cidrs.map((c) => {
    const [addr, bits] = c.split("/");
    const ip = parseIp(addr!);
    if (!ip) throw new Error(`not an address: ${c}`);
    // An IPv4-mapped CIDR (::ffff:10.0.0.0/104) becomes the IPv4 network it names.
    const offset = ip.v4 && addr!.includes(":") ? 96 : 0;
    const prefix = bits === undefined ? ip.bytes.length * 8 : Number(bits) - offset;
    return { ip, prefix: Math.max(0, prefix) };
  });
  return (candidate) => nets.some((n) => n.ip.v4 === candidate.v4 && samePrefix(n.ip.bytes, candidate.bytes, n.prefix));
}

function samePrefix(a: Uint8Array, b: Uint8Array, bits: number): boolean {
  const whole = bits >> 3;
  for (let i = 0; i < whole; i++) if (a[i] !== b[i]) return false;
  const rest = bits & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (a[whole]! & mask) === (b[whole]! & mask);
}
