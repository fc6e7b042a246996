/** The seeded generator of test/fuzz.test.ts: hostile requests built around the app's real routes. */
import { CHANNELS, PLATFORMS, type Variant } from "../src/config/variants";

export type Random = () => number;

/** mulberry32: small, fast, and the same sequence for the same seed on every machine. */
export function seededRandom(seed: number): Random {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface FuzzWorld {
  readonly variant: Variant;
  readonly routes: ReadonlyArray<{ method: string; path: string }>;
  readonly licenseKey: string;
  /** Names of the files in the release tree, so file parameters name real files too. */
  readonly fileNames: readonly string[];
  /** Real tokens and their devices, so some requests get past authentication. */
  readonly tokens: ReadonlyArray<{ token: string; device: Record<string, unknown> }>;
}

export interface FuzzRequest {
  readonly route: string;
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: string | Uint8Array | undefined;
}

const pick = <T>(r: Random, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
const chance = (r: Random, p: number) => r() < p;
const int = (r: Random, max: number) => Math.floor(r() * max);

function randomString(r: Random, max: number): string {
  const alphabets = [
    "abcdefghijklmnopqrstuvwxyz0123456789",
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_",
    "!\"#$%&'()*+,-./:;<=>?@[\\]^`{|}~ \t",
    "éüß漢字🔑\u202e\u0000\u200b\ud800",
  ];
  const alphabet = pick(r, alphabets);
  const chars = [...alphabet];
  let s = "";
  const n = int(r, max + 1);
  for (let i = 0; i < n; i++) s += pick(r, chars);
  return s;
}

const HOSTILE_SEGMENTS = [
  "..",
  ".",
  "%2e%2e",
  "%2E%2E%2F%2E%2E",
  "..%2f..%2f..%2fetc%2fpasswd",
  "..%5c..%5coutside.txt",
  "%2e%2e%2foutside.txt",
  "....//....//etc/passwd",
  "%00",
  "a%00.json",
  "%",
  "%zz",
  "%c0%ae%c0%ae",
  "~",
  "*",
  "%20",
  "CON",
  ".git",
  ".env",
  "-",
  "0",
  "-1",
  "1e309",
  "null",
  "undefined",
  "__proto__",
  "constructor",
  "%E2%80%AE",
  "%F0%9F%94%91",
  "x".repeat(3000),
];

/** Values a path parameter really takes, by its name where the name says (product, channel, platform). */
function validSegments(w: FuzzWorld, param: string): readonly string[] {
  const v = w.variant;
  if (/product/i.test(param) && v.products.length > 0) return v.products;
  if (/channel/i.test(param)) return CHANNELS;
  if (/platform/i.test(param)) return PLATFORMS;
  const versions = ["1.0.0", "1.1.0", "1.2.0-beta.1", "2.3.4"];
  const product = v.products[0] ?? v.name;
  return [
    ...w.fileNames,
    v.manifestFile,
    v.manifestFile,
    `${v.manifestFile}.sig`,
    ...versions,
    ...versions.map((ver) => `${product}-${ver}-win-x64.exe`),
    "latest",
  ];
}

function segment(r: Random, w: FuzzWorld, param = ""): string {
  const roll = r();
  if (roll < 0.85) return pick(r, validSegments(w, param));
  if (roll < 0.95) return pick(r, HOSTILE_SEGMENTS);
  return encodeURIComponent(randomString(r, 40).toWellFormed());
}

function fillPath(r: Random, template: string, w: FuzzWorld, clean: boolean): string {
  const param = (name: string) => (clean ? pick(r, validSegments(w, name)) : segment(r, w, name));
  let path = template
    .split("/")
    .map((seg) => (seg.startsWith(":") ? param(seg.slice(1)) : seg === "*" ? Array.from({ length: 1 + int(r, 3) }, () => param("")).join("/") : seg))
    .join("/");
  if (clean) return path;
  const mutations: Array<(p: string) => string> = [
    (p) => p + "/",
    (p) => p.replace("/api/", "//api/"),
    (p) => p + "/../../../outside.txt",
    (p) => p + "/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
    (p) => p.toUpperCase(),
    (p) => p.replace("/api/v1", "/api/v2"),
    (p) => p.replace("/api/v1", ""),
    (p) => p + "/" + pick(r, HOSTILE_SEGMENTS),
    (p) => p.split("/").slice(0, -1).join("/") || "/",
    (p) => p + ";jsessionid=1",
    (p) => p + "?" + pick(r, ["token=abc", "key=AL-AAAAA", "a=%zz", "x=" + "y".repeat(5000), "__proto__[x]=1", "&&&=="]),
    (p) => p + "#frag",
  ];
  if (chance(r, 0.25)) path = pick(r, mutations)(path);
  return path.startsWith("/") ? path : "/" + path;
}

function token(r: Random, w: FuzzWorld): string | null {
  const real = pick(r, w.tokens).token;
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");
  const [h, p, s] = real.split(".") as [string, string, string];
  if (chance(r, 0.5)) return real;
  const options: Array<() => string | null> = [
    () => null,
    () => real.slice(0, -2) + (real.endsWith("AA") ? "BB" : "AA"),
    () => `${b64({ alg: "none", typ: w.variant.tokenTyp })}.${p}.`,
    () => `${b64({ alg: "HS256", typ: w.variant.tokenTyp, kid: w.variant.defaultLicenseKid })}.${p}.${s}`,
    () => `${b64({ alg: "ES256", kid: "../../../etc/passwd" })}.${p}.${s}`,
    () => `${h}.${b64({ ...JSON.parse(Buffer.from(p, "base64url").toString()), exp: 9999999999 })}.${s}`,
    () => `${h}.${b64("not an object")}.${s}`,
    () => `${b64([1, 2])}.${b64(null)}.${s}`,
    () => "a.b.c",
    () => "....",
    () => "x".repeat(20_000),
    () => randomString(r, 300),
    () => Buffer.from(randomString(r, 200)).toString("base64url"),
  ];
  return pick(r, options)();
}

function authorization(r: Random, w: FuzzWorld): string | null {
  const t = token(r, w);
  if (t === null) return chance(r, 0.5) ? null : pick(r, ["Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "bearer", "Token abc", ""]);
  return pick(r, [`Bearer ${t}`, `Bearer ${t}`, `bearer ${t}`, `Bearer  ${t}  `, `Basic ${t}`, `Bearer ${t}, Bearer ${t}`, t]);
}

/** A value of any JSON type, sometimes big or deep. */
function jsonValue(r: Random, depth = 0): unknown {
  const roll = r();
  if (roll < 0.15) return null;
  if (roll < 0.3) return pick(r, [0, -1, 1e308, -0, 3.14, 2 ** 53 + 1]);
  if (roll < 0.4) return chance(r, 0.5);
  if (roll < 0.7 || depth > 3) return randomString(r, chance(r, 0.1) ? 500 : 40);
  if (roll < 0.85) return Array.from({ length: int(r, 4) }, () => jsonValue(r, depth + 1));
  const o: Record<string, unknown> = {};
  for (let i = int(r, 4); i > 0; i--)
    o[pick(r, ["hash", "name", "key", "device", "__proto__", "constructor", "product", randomString(r, 10)])] = jsonValue(r, depth + 1);
  return o;
}

/** The license key as people mistype it, and as attackers bend it. */
function licenseKey(r: Random, key: string): string {
  const forms: Array<() => string> = [
    () => key.toLowerCase(),
    () => key.replaceAll("-", ""),
    () => ` ${key.replaceAll("-", " ")} `,
    () => key.replace(/^[A-Z]{2}/, "ZZ"),
    () => key.replace(/O/g, "0").replace(/I/g, "1"),
    () => key.slice(0, -1),
    () => key + "-AAAAA",
    () => key.replace(/[A-Z0-9]$/, "U"),
    () => key.replace("-", "\u2010"),
    () => key.normalize("NFKD") + "\u0301",
    () => key.split("").reverse().join(""),
    () => "%" + key,
    () => key.repeat(10),
  ];
  return pick(r, forms)();
}

/** A plausible body for the route with one part broken, or plain garbage. */
function body(r: Random, w: FuzzWorld, authDevice: Record<string, unknown> | null): string | Uint8Array {
  const dev: Record<string, unknown> = { ...(authDevice ?? pick(r, w.tokens).device) };
  if (chance(r, 0.3)) dev.hash = Buffer.from(randomString(r, 32)).toString("base64url").slice(0, 43).padEnd(43, "A");
  const base: Record<string, unknown> = { key: chance(r, 0.3) ? licenseKey(r, w.licenseKey) : w.licenseKey, device: dev, id_token: "a.b.c" };
  const roll = r();
  if (roll < 0.15) return JSON.stringify(base);
  if (roll < 0.45) {
    const target = chance(r, 0.5) ? base : dev;
    const field = pick(r, Object.keys(target).concat(["extra", "__proto__"]));
    if (chance(r, 0.3)) delete target[field];
    else target[field] = jsonValue(r);
    return JSON.stringify(base);
  }
  const garbage: Array<() => string | Uint8Array> = [
    () => "",
    () => "null",
    () => "[]",
    () => '"text"',
    () => "1e309",
    () => "{",
    () => '{"key":',
    () => "{'key': 'x'}",
    () => JSON.stringify(jsonValue(r)),
    () => "[".repeat(5000) + "]".repeat(5000),
    () => '{"a":'.repeat(3000) + "1" + "}".repeat(3000),
    () => JSON.stringify({ ...base, pad: "x".repeat(17 * 1024) }),
    () => "x".repeat(64 * 1024),
    () => new Uint8Array([0xff, 0xfe, 0x7b, 0x22, 0xc3, 0x28, 0x7d]),
    () => new Uint8Array(Array.from({ length: int(r, 200) }, () => int(r, 256))),
    () => "\ufeff" + JSON.stringify(base),
    () => JSON.stringify(base).replace('"key"', '"key","key":1'),
    () => `{"__proto__":{"ok":true,"admin":true},"device":${JSON.stringify(dev)}}`,
    () => "key=AL-AAAAA&device=1",
  ];
  return pick(r, garbage)();
}

const METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "get", "post", "PROPFIND", "FOO", "M-SEARCH", "TRACE", "CONNECT"];
const CONTENT_TYPES = [
  "application/json",
  "application/json; charset=utf-8",
  "APPLICATION/JSON",
  "application/json;;",
  "application/jsonp",
  "text/json",
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=xyz",
  "application/octet-stream",
  "",
  "application/json, text/plain",
];

const RANGES = [
  "bytes=0-",
  "bytes=0-10",
  "bytes=-5",
  "bytes=100-",
  "bytes=abc",
  "bytes=5-1",
  "bytes=-0",
  "bytes=0-1,2-3,4-5",
  "bytes=99999999999999999999-",
  "items=0-1",
  "bytes=-99999999999",
  "bytes=3840-",
  "bytes= 0-1",
];

function extraHeaders(r: Random, h: Record<string, string>): void {
  const pool: Array<[string, () => string]> = [
    ["content-length", () => pick(r, ["0", "-1", "99999999999", "abc", "16385", "1"])],
    ["x-forwarded-for", () => pick(r, ["1.2.3.4", "::1", "garbage", "1.2.3.4, 5.6.7.8", "999.1.1.1", "[::1]:80", ""])],
    ["range", () => pick(r, RANGES)],
    ["if-range", () => pick(r, ['"etag"', "Thu, 01 Jan 1970 00:00:00 GMT", "garbage"])],
    ["if-none-match", () => pick(r, ["*", '"x"', 'W/"x"', "garbage"])],
    ["if-modified-since", () => pick(r, ["garbage", "Thu, 01 Jan 2099 00:00:00 GMT", "0"])],
    ["accept", () => pick(r, ["*/*", "text/html", "application/xml", ""])],
    ["accept-encoding", () => pick(r, ["gzip", "br, deflate", "identity;q=0", "*;q=0"])],
    ["cookie", () => "token=" + randomString(r, 30)],
    ["origin", () => pick(r, ["https://evil.example", "null"])],
    ["transfer-encoding", () => pick(r, ["chunked", "gzip, chunked", "identity"])],
    ["expect", () => "100-continue"],
    ["x-http-method-override", () => pick(r, ["DELETE", "GET"])],
    ["host", () => pick(r, ["evil.example", "localhost:99999", ""])],
    ["x-" + randomString(r, 8).replace(/[^a-z]/g, "") + "a", () => "x".repeat(int(r, 9000))],
  ];
  for (let i = int(r, 4); i > 0; i--) {
    const [name, value] = pick(r, pool);
    h[name] = value();
  }
}

/**
 * One hostile request aimed at one of the app's routes. A fifth are well-formed (the route's
 * method, real parameter values, a live token, a valid body) but for odd extra headers, so the
 * fuzz also reaches what lies behind authentication and validation.
 */
export function fuzzRequest(r: Random, w: FuzzWorld): FuzzRequest {
  const route = pick(r, w.routes);
  const clean = chance(r, 0.2) && /^[A-Z]+$/.test(route.method);
  if (clean) {
    const { token, device } = pick(r, w.tokens);
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    let payload: string | undefined;
    if (route.method !== "GET" && route.method !== "HEAD") {
      payload = JSON.stringify({ key: w.licenseKey, device, id_token: "a.b.c" });
      headers["content-type"] = "application/json";
    }
    if (chance(r, 0.6)) extraHeaders(r, headers);
    if (route.method === "GET" && chance(r, 0.4)) headers.range = pick(r, RANGES);
    return { route: `${route.method} ${route.path}`, method: route.method, path: fillPath(r, route.path, w, true), headers, body: payload };
  }
  const method = chance(r, 0.7) && /^[A-Z]+$/.test(route.method) ? route.method : pick(r, METHODS);
  const path = fillPath(r, route.path, w, false);
  const headers: Record<string, string> = {};
  const auth = authorization(r, w);
  if (auth !== null) headers.authorization = auth;
  const usedToken = auth && w.tokens.find((t) => auth.includes(t.token));
  let payload: string | Uint8Array | undefined;
  const upper = method.toUpperCase();
  if (upper !== "GET" && upper !== "HEAD" && chance(r, 0.85)) {
    payload = body(r, w, usedToken ? usedToken.device : null);
    headers["content-type"] = chance(r, 0.75) ? "application/json" : pick(r, CONTENT_TYPES);
  }
  if (chance(r, 0.4)) extraHeaders(r, headers);
  return { route: `${route.method} ${route.path}`, method, path, headers, body: payload };
}
