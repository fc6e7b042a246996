import { afterAll, beforeAll, expect, test } from "bun:test";
import { Vendor } from "./vendor";
import { mirrorSite } from "./mirror-site";

// Issue 34 item 1: a mirror must never silently accept what its vendor revoked. Its vendor here
// has more than 250,000 live revocations (ordinary churn: each deactivation stays live for its
// tokens' 7 days), sent in the real feed format by a fake vendor on a real Bun.serve, through the
// events and through the snapshot; a revocation after them must still be refused at the mirror.

const DAY = 86_400_000;
const CHURN = Number(process.env.CHURN ?? 260_000);
let vendor: Vendor;
let server: ReturnType<typeof Bun.serve>;
/** Deactivations seq 1..churn (act_<seq>), then `later` events after them. */
let churn = 0;
let later: { type: string; data: unknown }[] = [];
let until = "";
let timestamp = "";
const feedRequests = { events: 0, snapshot: 0 };

const iso = (ms: number) => new Date(ms).toISOString().replace(".000Z", "+00:00");

function event(seq: number) {
  if (seq <= churn)
    return {
      id: `evt_${seq}`,
      seq: String(seq),
      type: "activation.deactivated",
      timestamp,
      data: { activation: { id: `act_${seq}`, license: `lic_${seq}` }, tokensValidUntil: until },
    };
  const e = later[seq - churn - 1]!;
  return { id: `evt_${seq}`, seq: String(seq), type: e.type, timestamp, data: e.data };
}

/** The feed (docs/admin-api.md "The vendor feed"): events after a cursor of epoch s1; a snapshot of every deactivation without one. */
function answer(url: URL): Response {
  const limit = Number(url.searchParams.get("limit"));
  const newest = churn + later.length;
  const after = url.searchParams.get("after");
  if (after !== null) {
    feedRequests.events++;
    const from = Number(after.slice(3)) + 1;
    const events = [];
    for (let seq = from; seq <= Math.min(newest, from + limit - 1); seq++) events.push(event(seq));
    return Response.json({ ok: true, mode: "events", epoch: "s1", events, cursor: `s1.${events.length ? events.at(-1)!.seq : from - 1}` });
  }
  feedRequests.snapshot++;
  const offset = Number(url.searchParams.get("snapshot") ?? "0");
  const revocations = [];
  for (let i = offset + 1; i <= Math.min(churn, offset + limit); i++) revocations.push({ kind: "activation", id: `act_${i}`, tokensValidUntil: until });
  const next = offset + limit < churn ? String(offset + limit) : null;
  return Response.json({ ok: true, mode: "snapshot", epoch: "s1", reason: "start", revocations, expiries: [], releases: [], next, cursor: `s1.${newest}` });
}

beforeAll(async () => {
  server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (r) => answer(new URL(r.url)) });
  vendor = await new Vendor("alpha", `http://127.0.0.1:${server.port}`).init();
  vendor.tree.add({ version: "1.2.0" });
});
afterAll(() => {
  server.stop(true);
  vendor.remove();
});

async function follow(m: Awaited<ReturnType<typeof mirrorSite>>): Promise<number> {
  let pages = 0;
  for (;;) {
    const outcome = await m.follower.pollOnce();
    if (!outcome.ok) throw new Error(outcome.problem);
    pages++;
    if (!outcome.more) return pages;
  }
}

async function errorOf(res: Response): Promise<string | null> {
  return res.status === 200 ? null : ((await res.json()) as { error: string }).error;
}

type Health = { mirror: { entries: number; problem: string | null } };

test(`past ${CHURN} live revocations, through the events and then a snapshot, a revocation after them is refused at the mirror`, async () => {
  const m = await mirrorSite(vendor, `http://127.0.0.1:${server.port}`, { requestTimeoutMs: 5000 });
  const fresh = await mirrorSite(vendor, `http://127.0.0.1:${server.port}`, { clock: m.clock, requestTimeoutMs: 5000 });
  try {
    const now = m.clock();
    timestamp = iso(now);
    until = iso(now + 7 * DAY);
    churn = 0;
    later = [];
    expect(await follow(m)).toBe(1);
    const manifest = `/updates/alpha/stable/win-x64/alpha-update.json`;
    const token = (activation: string, license = "lic_target") => vendor.token({ activation, license, nowMs: now });

    // Events: 260,000 deactivations, page after page.
    churn = CHURN;
    const started = performance.now();
    expect(await follow(m)).toBe(CHURN / 500 + 1);
    const eventsMs = performance.now() - started;
    const health = (await (await m.get("/health")).json()) as Health;
    expect(health.mirror.entries).toBe(CHURN);
    expect(health.mirror.problem).toBeNull();
    expect(await errorOf(await m.get(manifest, token(`act_${CHURN - 7}`, `lic_${CHURN - 7}`)))).toBe("entitlement_revoked");

    // One more revocation after them: refused at the mirror once its poll has read it.
    const target = token("act_target");
    expect((await m.get(manifest, target)).status).toBe(200);
    later.push({ type: "license.revoked", data: { license: { id: "lic_target" }, tokensValidUntil: until } });
    await follow(m);
    expect(await errorOf(await m.get(manifest, target))).toBe("license_revoked");

    // A new mirror of the same vendor is answered a snapshot of all of it: it takes it whole, then the events after.
    const snapStarted = performance.now();
    expect(await follow(fresh)).toBe(CHURN / 500);
    const snapshotMs = performance.now() - snapStarted;
    expect(((await (await fresh.get("/health")).json()) as Health).mirror.entries).toBe(CHURN);
    expect(await errorOf(await fresh.get(manifest, token(`act_${CHURN}`, `lic_${CHURN}`)))).toBe("entitlement_revoked");
    const another = token("act_another", "lic_another");
    expect((await fresh.get(manifest, another)).status).toBe(200);
    later.push({ type: "activation.deactivated", data: { activation: { id: "act_another", license: "lic_another" }, tokensValidUntil: until } });
    await follow(fresh);
    expect(await errorOf(await fresh.get(manifest, another))).toBe("entitlement_revoked");
    // A week on, every one of those tokens has expired: the revocations are forgotten, and the disk with them.
    m.clock.advance(7 * DAY + 1000);
    await follow(m);
    expect(((await (await m.get("/health")).json()) as Health).mirror.entries).toBe(0);
    console.log(`${CHURN} revocations: events ${Math.round(eventsMs)} ms, snapshot ${Math.round(snapshotMs)} ms`);
  } finally {
    await m.close();
    await fresh.close();
  }
}, 60_000);
