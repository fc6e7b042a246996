import { describe, expect, test } from "bun:test";
import { FeedProblem, parseFeedAnswer, type EventsPage } from "../../src/domain/mirror/feed-answer";

const NOW = Date.parse("2026-11-21T22:40:00Z");
const ev = (seq: string, type = "license.reinstated", data: unknown = { license: { id: "lic_a" } }) => ({
  id: `evt_${seq}`,
  seq,
  type,
  timestamp: "2026-11-21T22:39:27+00:00",
  data,
});
const events = (list: unknown[], cursor: string, epoch = "e1") => ({ ok: true, mode: "events", epoch, events: list, cursor: `${epoch}.${cursor}` });
const snapshot = (o: Record<string, unknown> = {}) => ({
  ok: true,
  mode: "snapshot",
  epoch: "e1",
  reason: "start",
  revocations: [],
  expiries: [],
  releases: [],
  next: null,
  cursor: "e1.7",
  ...o,
});
const problem = (body: unknown, after: string | null) => {
  try {
    parseFeedAnswer(body, after, NOW);
    return null;
  } catch (e) {
    expect(e).toBeInstanceOf(FeedProblem);
    return (e as Error).message;
  }
};

describe("feed answers", () => {
  test("known events in order; unknown types passed over but counted; the cursor moves", () => {
    const page = parseFeedAnswer(events([ev("5"), ev("6", "webhook.tested", { anything: 1 }), ev("9")], "9"), "e1.4", NOW) as EventsPage;
    expect(page.events.map((e) => e.seq)).toEqual(["5", "9"]);
    expect(page.received).toBe(3);
    expect(page.cursor).toBe("e1.9");
    expect(parseFeedAnswer(events([], "12"), "e1.12", NOW).cursor).toBe("e1.12");
  });

  test("refused whole: seqs not ascending or not past `after`, a cursor going back, bad shapes, a huge seq", () => {
    expect(problem(events([ev("5"), ev("5")], "5"), "e1.0")).toContain("went backwards");
    expect(problem(events([ev("3")], "3"), "e1.3")).toContain("went backwards");
    expect(problem(events([], "2"), "e1.3")).toContain("cursor e1.2 is before e1.3");
    expect(problem(events([ev("7")], "6"), "e1.3")).toContain("before the page's last event");
    expect(problem(events([ev("4", "license.revoked", { license: { id: "lic_a" } })], "4"), "e1.3")).toContain("malformed license.revoked");
    expect(problem(events([ev("4", "activation.deactivated", { activation: { id: "" }, tokensValidUntil: "x" })], "4"), "e1.0")).toContain("malformed");
    expect(problem({ ...events([], "0"), cursor: "-1" }, "e1.0")).toContain("malformed feed answer");
    expect(problem({ ok: false, error: "x" }, null)).toContain("malformed feed answer");
    expect(problem(events([], "1".repeat(25)), "e1.0")).toContain("malformed feed answer");
    expect(problem("garbage", null)).toContain("malformed feed answer");
  });

  test("events are refused where a snapshot was due: no cursor, or a cursor of other records; a cursor must be of the answer's epoch", () => {
    expect(problem(events([], "0"), null)).toContain("where a snapshot was due");
    expect(problem(events([], "9"), "e0.9")).toContain("where a snapshot was due");
    expect(problem(events([], "9"), "9")).toContain("where a snapshot was due");
    expect(problem({ ...events([], "9"), cursor: "e2.9" }, "e1.9")).toContain("not of the answer's records");
    expect(problem(snapshot({ cursor: "e2.7" }), null)).toContain("not of the answer's records");
  });

  test("a snapshot: revocations with their lifetimes, expiries, release controls at the vendor's times", () => {
    const page = parseFeedAnswer(
      snapshot({
        revocations: [{ kind: "activation", id: "act_1", tokensValidUntil: "2026-11-28T00:00:00+00:00" }],
        expiries: [{ license: "lic_1", expires: "2026-11-22T00:00:00Z" }],
        releases: [{ lane: "alpha/stable/win-x64", version: "1.0.0", halted: "2026-11-20T00:00:00Z", haltedMs: 5, withdrawn: null }],
      }),
      "e0.40",
      NOW,
    );
    expect(page).toMatchObject({
      mode: "snapshot",
      received: 3,
      next: null,
      cursor: "e1.7",
      revocations: [{ kind: "activation", id: "act_1", validUntil: Date.parse("2026-11-28T00:00:00Z") }],
      expiries: [{ licenseId: "lic_1", expires: Date.parse("2026-11-22T00:00:00Z") }],
      releases: [{ lane: "alpha/stable/win-x64", version: "1.0.0", halted: Date.parse("2026-11-20T00:00:00Z"), haltedMs: 5, withdrawn: null }],
    });
  });

  test("implausible pages are refused: too many items, times absurdly far ahead or long past, ids too long", () => {
    const revocation = (i: number, until = "2026-11-28T00:00:00Z") => ({ kind: "license", id: `lic_${i}`, tokensValidUntil: until });
    expect(problem(snapshot({ revocations: Array.from({ length: 1001 }, (_, i) => revocation(i)) }), null)).toContain("malformed feed snapshot");
    expect(
      problem(
        snapshot({
          revocations: Array.from({ length: 600 }, (_, i) => revocation(i)),
          expiries: Array.from({ length: 600 }, (_, i) => ({ license: `l${i}`, expires: "2026-11-22T00:00:00Z" })),
        }),
        null,
      ),
    ).toContain("implausible");
    expect(problem(snapshot({ revocations: [revocation(1, "9999-12-31T00:00:00Z")] }), null)).toContain("implausible");
    expect(problem(snapshot({ revocations: [revocation(1, "1999-12-31T00:00:00Z")] }), null)).toContain("implausible");
    expect(problem(snapshot({ revocations: [{ kind: "license", id: "x".repeat(301), tokensValidUntil: "2026-11-28T00:00:00Z" }] }), null)).toContain(
      "malformed",
    );
    expect(
      problem(
        events(
          Array.from({ length: 1001 }, (_, i) => ev(String(i + 1))),
          "1001",
        ),
        "e1.0",
      ),
    ).toContain("malformed feed answer");
  });
});
