import { describe, expect, test } from "bun:test";
import { clientAddressResolver } from "../../src/http/client-address";
import { addressGroup, cidrMatcher, formatIp, parseIp } from "../../src/http/ip";

const ip = (t: string) => {
  const p = parseIp(t);
  if (!p) throw new Error(`unparsable ${t}`);
  return p;
};

describe("IP addresses", () => {
  test("IPv4 and IPv6 forms are parsed and printed canonically", () => {
    expect(formatIp(ip("192.0.2.1"))).toBe("192.0.2.1");
    expect(formatIp(ip("2001:DB8:0:0:0:0:0:1"))).toBe("2001:db8::1");
    expect(formatIp(ip("2001:db8:0:0:1:0:0:1"))).toBe("2001:db8::1:0:0:1");
    expect(formatIp(ip("::"))).toBe("::");
    expect(formatIp(ip("::1"))).toBe("::1");
    expect(formatIp(ip("fe80::1%eth0"))).toBe("fe80::1");
    // What a dual-stack socket reports for an IPv4 client is read as that IPv4 address.
    expect(formatIp(ip("::ffff:203.0.113.9"))).toBe("203.0.113.9");
    expect(formatIp(ip("::ffff:cb00:7109"))).toBe("203.0.113.9");
  });

  test("malformed addresses are refused", () => {
    for (const bad of ["", "1.2.3", "1.2.3.256", "1.2.3.4.5", "01234::", "1::2::3", "1:2:3:4:5:6:7:8:9", "abc", "::g", "1:2:3:4:5:6:7", "::ffff:1.2.3"])
      expect(parseIp(bad)).toBeNull();
    expect(parseIp("1.2.3.4 ")).not.toBeNull(); // surrounding space is trimmed, as in X-Forwarded-For lists
  });

  test("IPv6 clients are grouped by their /64, IPv4 clients by their address", () => {
    expect(addressGroup(ip("2001:db8:1:2:aaaa::1"))).toBe("2001:db8:1:2::/64");
    expect(addressGroup(ip("2001:db8:1:2:ffff:ffff:ffff:ffff"))).toBe("2001:db8:1:2::/64");
    expect(addressGroup(ip("2001:db8:1:3::1"))).toBe("2001:db8:1:3::/64");
    expect(addressGroup(ip("198.51.100.4"))).toBe("198.51.100.4");
  });

  test("CIDR lists match their networks only", () => {
    const m = cidrMatcher(["10.0.0.0/8", "192.168.1.7", "2001:db8:aa::/48", "172.16.0.0/12"]);
    expect(m(ip("10.255.1.2"))).toBe(true);
    expect(m(ip("11.0.0.1"))).toBe(false);
    expect(m(ip("192.168.1.7"))).toBe(true);
    expect(m(ip("192.168.1.8"))).toBe(false);
    expect(m(ip("172.31.255.255"))).toBe(true);
    expect(m(ip("172.32.0.0"))).toBe(false);
    expect(m(ip("2001:db8:aa:ffff::1"))).toBe(true);
    expect(m(ip("2001:db8:ab::1"))).toBe(false);
    expect(m(ip("::ffff:10.1.1.1"))).toBe(true);
    expect(cidrMatcher(["::ffff:10.0.0.0/104"])(ip("10.9.9.9"))).toBe(true);
    expect(cidrMatcher(["0.0.0.0/0"])(ip("2001:db8::1"))).toBe(false);
  });
});

describe("client address behind proxies", () => {
  const resolve = clientAddressResolver(["10.0.0.0/8", "2001:db8:ffff::/48"]);
  const text = (peer: string | null, xff: string | null) => {
    const r = resolve(peer, xff);
    return r && formatIp(r);
  };

  test("an untrusted peer cannot choose its address by header", () => {
    expect(text("203.0.113.5", "198.51.100.1")).toBe("203.0.113.5");
    expect(text("203.0.113.5", "10.0.0.1")).toBe("203.0.113.5");
    expect(clientAddressResolver([])("203.0.113.5", "198.51.100.1")).toEqual(ip("203.0.113.5"));
  });

  test("a trusted peer's X-Forwarded-For is read right to left, skipping trusted hops", () => {
    expect(text("10.0.0.2", "198.51.100.1")).toBe("198.51.100.1");
    expect(text("10.0.0.2", "198.51.100.1, 10.0.0.9")).toBe("198.51.100.1");
    // The client's own (forged) entries are left of the first untrusted address and never believed.
    expect(text("10.0.0.2", "1.1.1.1, 198.51.100.1, 10.0.0.9")).toBe("198.51.100.1");
    expect(text("10.0.0.2", "10.9.9.9, 10.0.0.9")).toBe("10.9.9.9");
    expect(text("2001:db8:ffff::1", "[2001:db8:1::5]:443")).toBe("2001:db8:1::5");
    expect(text("10.0.0.2", "198.51.100.1:5678")).toBe("198.51.100.1");
    expect(text("::ffff:10.0.0.2", "198.51.100.1")).toBe("198.51.100.1");
  });

  test("a malformed hop ends the walk at the last trusted hop", () => {
    expect(text("10.0.0.2", "198.51.100.1, garbage")).toBe("10.0.0.2");
    expect(text("10.0.0.2", "garbage, 10.0.0.7")).toBe("10.0.0.7");
    expect(text("10.0.0.2", "")).toBe("10.0.0.2");
  });

  test("no peer, no address", () => {
    expect(text(null, "198.51.100.1")).toBeNull();
  });
});
