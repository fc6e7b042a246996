import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Database } from "bun:sqlite";
import { Vendor } from "./vendor";
import { mirrorSite } from "./mirror-site";

// Issue 21, item 5: a vendor's feed (or whoever answers at its address) that tries to fill a
// mirror's disk and memory. A real Bun.serve on port 0 answers whatever the test sets; the mirror
// must bound what it reads, keeps and how fast, refuse the implausible, and say why in /health.

const MB = 1024 * 1024;
let vendor: Vendor;
let server: ReturnType<typeof Bun.serve>;
let answer: (url: URL) => Response = () => new Response("unset", { status: 500 });
let bytesSent = 0;

beforeAll(async () => {
  server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (r) => answer(new URL(r.url)) });
  vendor = await new Vendor("alpha", `http://127.0.0.1:${server.port}`).init();
  vendor.tree.add({ version: "1.2.0" });
});
afterAll(() => {
  server.stop(true);
  vendor.remove();
});

const url = () => `http://127.0.0.1:${server.port}`;
const iso = (ms: number) => new Date(ms).toISOString();
const dbOf = (m: Awaited<ReturnType<typeof mirrorSite>>) => (m.composed.store as unknown as { db: Database }).db;
const kept = (m: Awaited<ReturnType<typeof mirrorSite>>) => (dbOf(m).query("SELECT count(*) AS n FROM mirror_revocations").get() as { n: number }).n;
const health = async (m: Awaited<ReturnType<typeof mirrorSite>>) =>
  ((await (await m.get("/health")).json()) as { mirror: { problem: string | null; cursor: string | null } }).mirror;

function snapshotPage(from: number, count: number, until: string, next: string | null) {
  const revocations = Array.from({ length: count }, (_, i) => ({ kind: "activation", id: `act_${"x".repeat(250)}${from + i}`, tokensValidUntil: until }));
  return { ok: true, mode: "snapshot", epoch: "evil", reason: "start", revocations, expiries: [], releases: [], next, cursor: "evil.1" };
}

test("an endless body is read no further than the byte bound; /health and the log say why", async () => {
  bytesSent = 0;
  answer = () => {
    const chunk = new Uint8Array(256 * 1024).fill(0x20);
    return new Response(
      new ReadableStream({
        pull(c) {
          bytesSent += chunk.byteLength;
          if (bytesSent > 200 * MB) c.close();
          else c.enqueue(chunk);
        },
      }),
      { headers: { "content-type": "application/json" } },
    );
  };
  const m = await mirrorSite(vendor, url());
  try {
    const outcome = await m.follower.pollOnce();
    expect(outcome.ok).toBe(false);
    expect(outcome.ok ? "" : outcome.problem).toContain("larger than 4194304 bytes");
    expect(bytesSent).toBeLessThan(16 * MB);
    expect((await health(m)).problem).toContain("larger than");
    expect(m.lines.some((l) => l.msg === "mirror feed refused: keeping what is known" && String(l.problem).includes("larger than"))).toBe(true);
  } finally {
    await m.close();
  }
});

test("pages with too many items, absurd lifetimes, or short pages that announce more are refused whole", async () => {
  const m = await mirrorSite(vendor, url());
  try {
    const now = m.clock();
    answer = () => Response.json(snapshotPage(0, 5000, iso(now + 86_400_000), null));
    expect((await health(m)).problem).toBeNull();
    let outcome = await m.follower.pollOnce();
    expect(outcome.ok ? "" : outcome.problem).toContain("malformed feed snapshot");

    answer = () => Response.json(snapshotPage(0, 10, "9999-12-31T00:00:00Z", null));
    outcome = await m.follower.pollOnce();
    expect(outcome.ok ? "" : outcome.problem).toContain("implausible");
    expect((await health(m)).problem).toContain("implausible");

    answer = () => Response.json(snapshotPage(0, 3, iso(now + 86_400_000), "more"));
    outcome = await m.follower.pollOnce();
    expect(outcome.ok ? "" : outcome.problem).toContain("announces more");

    // In the events too: a deactivation whose tokens would outlive any TTL is not kept for ever.
    answer = (u) =>
      Response.json(
        u.searchParams.get("after") === null
          ? snapshotPage(0, 0, iso(now), null)
          : {
              ok: true,
              mode: "events",
              epoch: "evil",
              events: [
                {
                  id: "evt_1",
                  seq: "2",
                  type: "activation.deactivated",
                  timestamp: iso(now),
                  data: { activation: { id: "act_1" }, tokensValidUntil: "2999-01-01T00:00:00Z" },
                },
              ],
              cursor: "evil.2",
            },
      );
    expect((await m.follower.pollOnce()).ok).toBe(true);
    outcome = await m.follower.pollOnce();
    expect(outcome.ok ? "" : outcome.problem).toContain("implausible");
    expect(kept(m)).toBe(0);
    expect((await health(m)).cursor).toBe("evil.1");
  } finally {
    await m.close();
  }
});

test("a snapshot or a stream of events beyond the entries bound is refused: disk and memory stay bounded, pages come PAGE_GAP_MS apart", async () => {
  const m = await mirrorSite(vendor, url(), { maxEntries: 1200 });
  try {
    let until = iso(m.clock() + 86_400_000);
    let pages = 0;
    answer = (u) => {
      pages++;
      const from = Number(u.searchParams.get("snapshot") ?? "0");
      return Response.json(snapshotPage(from, 500, until, String(from + 500)));
    };
    expect(await m.follower.pollOnce()).toEqual({ ok: true, applied: 0, more: true });
    expect(await m.follower.pollOnce()).toEqual({ ok: true, applied: 0, more: true });
    const refused = await m.follower.pollOnce();
    expect(refused.ok ? "" : refused.problem).toContain("more than 1200 entries");
    expect(pages).toBe(3);
    expect(kept(m)).toBe(0);
    expect(m.follower.nextDelayMs({ ok: true, applied: 0, more: true })).toBe(100);

    // Events: page after page of new revocations, until the bound.
    let seq = 1;
    answer = (u) => {
      if (u.searchParams.get("after") === null) return Response.json(snapshotPage(0, 0, until, null));
      const events = Array.from({ length: 500 }, () => {
        seq++;
        return {
          id: `evt_${seq}`,
          seq: String(seq),
          type: "activation.deactivated",
          timestamp: iso(m.clock()),
          data: { activation: { id: `act_${seq}` }, tokensValidUntil: until },
        };
      });
      return Response.json({ ok: true, mode: "events", epoch: "evil", events, cursor: `evil.${seq}` });
    };
    expect((await m.follower.pollOnce()).ok).toBe(true);
    expect(await m.follower.pollOnce()).toMatchObject({ ok: true, applied: 500 });
    expect(await m.follower.pollOnce()).toMatchObject({ ok: true, applied: 500 });
    const full = await m.follower.pollOnce();
    expect(full.ok ? "" : full.problem).toContain("more than this mirror's bound of 1200");
    expect(kept(m)).toBe(1000);
    // What it could not keep may revoke any token: health and every bearer request say so with 503.
    const down = await m.get("/health");
    expect(down.status).toBe(503);
    expect(((await down.json()) as { message: string }).message).toContain("bound of 1200 entries");
    const served = vendor.token({ activation: "act_unrelated", license: "lic_unrelated", nowMs: m.clock(), iss: url() });
    const refusedBearer = await m.get("/releases", served);
    expect(refusedBearer.status).toBe(503);
    expect(((await refusedBearer.json()) as { error: string }).error).toBe("unavailable");
    // Revocations are forgotten once their tokens have expired, which makes room again.
    m.clock.advance(86_400_000);
    until = iso(m.clock() + 86_400_000);
    seq = 1001;
    expect(await m.follower.pollOnce()).toMatchObject({ ok: true, applied: 500 });
    expect(kept(m)).toBe(500);
    expect((await health(m)).problem).toBeNull();
    expect((await m.get("/releases", vendor.token({ activation: "act_unrelated", license: "lic_unrelated", nowMs: m.clock(), iss: url() }))).status).toBe(200);
  } finally {
    await m.close();
  }
});
