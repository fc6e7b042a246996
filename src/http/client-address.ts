import { cidrMatcher, parseIp, type Ip } from "./ip";

/** X-Forwarded-For entries looked at, from the right; a longer chain is a forgery or a loop. */
const MAX_HOPS = 16;

/**
 * The client's address as keyturn believes it: the socket peer, unless the peer is a trusted
 * proxy (--trust-proxy). Then X-Forwarded-For is read from the right, skipping trusted hops, and
 * the first untrusted address is the client. An untrusted peer's header is never read, so a client
 * cannot choose its own address. Null when the peer is unknown.
 */
export function clientAddressResolver(trustProxy: readonly string[]) {
  const trusted = cidrMatcher(trustProxy);
  return (peer: string | null, forwardedFor: string | null): Ip | null => {
    const peerIp = peer === null ? null : parseIp(peer);
    if (!peerIp) return null;
    let client = peerIp;
    if (trustProxy.length === 0 || !forwardedFor) return client;
    const hops = forwardedFor.split(",").slice(-MAX_HOPS).reverse();
    for (const hop of hops) {
      if (!trusted(client)) break;
      const ip = parseIp(stripPort(hop));
      // A malformed entry ends the walk: the last trusted hop is then the best we know.
      if (!ip) break;
      client = ip;
    }
    return client;
  };
}

/** `1.2.3.4:5678`, `[2001:db8::1]:443` and `"[2001:db8::1]"` → the bare address. */
function stripPort(hop: string): string {
  const h = hop.trim().replace(/^"|"$/g, "");
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(h);
  if (bracketed) return bracketed[1]!;
  const v4WithPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(h);
  return v4WithPort ? v4WithPort[1]! : h;
}
