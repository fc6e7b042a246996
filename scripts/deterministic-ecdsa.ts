/**
 * ES256 signatures with the nonce of RFC 6979 (deterministic ECDSA over P-256 with SHA-256), so
 * scripts/client-vectors.ts writes the same bytes on every run and a test can compare them with
 * the committed files. node:crypto draws a random nonce and cannot be told otherwise. Test
 * material only: plain BigInt arithmetic, not constant-time.
 */
import { createHash, createHmac } from "node:crypto";

const P = 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffffn;
const A = P - 3n;
const N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;
const G: Point = {
  x: 0x6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296n,
  y: 0x4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5n,
};

type Point = { x: bigint; y: bigint } | null;

const mod = (a: bigint, m: bigint) => ((a % m) + m) % m;

function inverse(a: bigint, m: bigint): bigint {
  let [r0, r1, t0, t1] = [mod(a, m), m, 1n, 0n];
  while (r1 !== 0n) {
    const q = r0 / r1;
    [r0, r1] = [r1, r0 - q * r1];
    [t0, t1] = [t1, t0 - q * t1];
  }
  return mod(t0, m);
}

function add(p: Point, q: Point): Point {
  if (p === null) return q;
  if (q === null) return p;
  if (p.x === q.x && mod(p.y + q.y, P) === 0n) return null;
  const l = p.x === q.x && p.y === q.y ? mod((3n * p.x * p.x + A) * inverse(2n * p.y, P), P) : mod((q.y - p.y) * inverse(q.x - p.x, P), P);
  const x = mod(l * l - p.x - q.x, P);
  return { x, y: mod(l * (p.x - x) - p.y, P) };
}

function multiply(k: bigint, p: Point): Point {
  let result: Point = null;
  let addend = p;
  for (let e = k; e > 0n; e >>= 1n) {
    if (e & 1n) result = add(result, addend);
    addend = add(addend, addend);
  }
  return result;
}

const toInt = (b: Uint8Array) => BigInt(`0x${Buffer.from(b).toString("hex") || "0"}`);
const to32 = (n: bigint) => Buffer.from(n.toString(16).padStart(64, "0"), "hex");
const hmac = (key: Buffer, ...parts: Buffer[]) => createHmac("sha256", key).update(Buffer.concat(parts)).digest();

/** The public point of a private scalar, as JWK coordinates (base64url). */
export function publicOf(d: bigint): { x: string; y: string } {
  const q = multiply(d, G)!;
  return { x: to32(q.x).toString("base64url"), y: to32(q.y).toString("base64url") };
}

/** A private scalar from a seed text (1 <= d < n). */
export function scalarFrom(seed: string): bigint {
  return mod(toInt(createHash("sha256").update(seed).digest()), N - 1n) + 1n;
}

/** The RFC 6979 nonce for a private key and message digest (section 3.2, qlen = hlen = 256). */
export function nonce(d: bigint, h1: Buffer): bigint {
  const x = to32(d);
  const h = to32(mod(toInt(h1), N));
  let v = Buffer.alloc(32, 1);
  let k = Buffer.alloc(32, 0);
  k = hmac(k, v, Buffer.from([0]), x, h);
  v = hmac(k, v);
  k = hmac(k, v, Buffer.from([1]), x, h);
  v = hmac(k, v);
  for (;;) {
    v = hmac(k, v);
    const candidate = toInt(v);
    if (candidate >= 1n && candidate < N) return candidate;
    k = hmac(k, v, Buffer.from([0]));
    v = hmac(k, v);
  }
}

/** The JOSE ES256 signature (r || s, 64 bytes) of `message` with the private scalar `d`. */
export function signEs256(d: bigint, message: Uint8Array): Buffer {
  const h1 = createHash("sha256").update(message).digest();
  const z = toInt(h1);
  const k = nonce(d, h1);
  const r = mod(multiply(k, G)!.x, N);
  const s = mod(inverse(k, N) * (z + r * d), N);
  if (r === 0n || s === 0n) throw new Error("degenerate signature; pick another key");
  return Buffer.concat([to32(r), to32(s)]);
}

export const privateScalarBytes = to32;
