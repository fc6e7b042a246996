import { describe, expect, test } from "bun:test";
import { FeedProblem, parseFeedAnswer } from "../../src/domain/mirror/feed-answer";

const ev = (seq: string, type = "license.reinstated", data: unknown = { license: { id: "lic_a" } }) => ({ id: `evt_${seq}`, seq, type, timestamp: "2026-11-21T22:39:27+00:00", data });
const problem = (body: unknown, after: string | null) => {
  try {
    parseFeedAnswer(body, after);
    return null;
  } catch (e) {
    expect(e).toBeInstanceOf(FeedProblem);
    return (e as Error).message;
  }
};

describe("feed answers", () => {
  test("known events in order; unknown types passed over but counted; the cursor moves", () => {
    const page = parseFeedAnswer({ ok: true, events: [ev("5"), ev("6", "webhook.tested", { anything: 1 }), ev("9")], cursor: "9" }, "4");
    expect(page.events.map((e) => e.seq)).toEqual(["5", "9"]);
    expect(page.received).toBe(3);
    expect(page.cursor).toBe("9");
    expect(parseFeedAnswer({ ok: true, events: [], cursor: "0" }, null).cursor).toBeNull();
    expect(parseFeedAnswer({ ok: true, events: [], cursor: "12" }, "12").cursor).toBe("12");
  });

  test("refused whole: seqs not ascending or not past `after`, a cursor going back, bad shapes, a huge seq", () => {
    expect(problem({ ok: true, events: [ev("5"), ev("5")], cursor: "5" }, null)).toContain("went backwards");
    expect(problem({ ok: true, events: [ev("3")], cursor: "3" }, "3")).toContain("went backwards");
    expect(problem({ ok: true, events: [], cursor: "2" }, "3")).toContain("cursor 2 is before 3");
    expect(problem({ ok: true, events: [ev("7")], cursor: "6" }, "3")).toContain("before the page's last event");
    expect(problem({ ok: true, events: [ev("4", "license.revoked", { license: { id: "lic_a" } })], cursor: "4" }, "3")).toContain("malformed license.revoked");
    expect(problem({ ok: true, events: [ev("4", "activation.deactivated", { activation: { id: "" }, tokensValidUntil: "x" })], cursor: "4" }, null)).toContain("malformed");
    expect(problem({ ok: true, events: [], cursor: "-1" }, null)).toContain("malformed feed answer");
    expect(problem({ ok: false, error: "x" }, null)).toContain("malformed feed answer");
    expect(problem({ ok: true, events: [], cursor: "1".repeat(25) }, null)).toContain("malformed feed answer");
    expect(problem("garbage", null)).toContain("malformed feed answer");
  });
});
