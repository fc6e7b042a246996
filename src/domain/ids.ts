/** Crockford base32: the license key alphabet, also used for random ids. */
export const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

// Random bytes are drawn from the system's CSPRNG a pool at a time: one call per id (three per
// activation) cost more than the rest of making it. A byte is used once, then the pool is refilled.
const pool = new Uint8Array(4096);
let next = pool.length;

export function randomBase32(length: number): string {
  if (length > pool.length) throw new RangeError("randomBase32: too long");
  if (next + length > pool.length) {
    crypto.getRandomValues(pool);
    next = 0;
  }
  let out = "";
  for (let i = 0; i < length; i++) out += CROCKFORD[pool[next + i]! & 31];
  pool.fill(0, next, next + length);
  next += length;
  return out;
}

/**
 * `act_…`, `lic_…`, `ref_…` (and `evt_`, `tok_`, `whe_`, `dlv_`): 20 base32 characters, the creation time in milliseconds (10) then
 * 50 random bits (10). Ids made one after another sort together, so every index keyed by them
 * grows at its end: an insert rewrites the index's last page instead of a random one, which is
 * most of what a commit writes (bench/README.md, "Notes behind the code"). `now` is the
 * caller's injected clock, so an id's time is the time of the record it names.
 */
export function newId(prefix: "act" | "lic" | "ref" | "evt" | "tok" | "whe" | "dlv" | "mail", now: number): string {
  let time = "";
  for (let i = 0, t = now; i < 10; i++, t = Math.floor(t / 32)) time = CROCKFORD[t % 32] + time;
  return `${prefix}_${(time + randomBase32(10)).toLowerCase()}`;
}

export function sha256Hex(text: string): string {
  return new Bun.CryptoHasher("sha256").update(text).digest("hex");
}
