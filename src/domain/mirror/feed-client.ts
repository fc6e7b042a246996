import { FeedProblem, parseFeedAnswer, type FeedPage } from "./feed-answer";
import { escapeControl } from "../../config/text";

/** Feed answers beyond this are refused unread, the body read no further (1,000 items of a few hundred bytes each fit easily). */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

export interface FeedRequest {
  /** The vendor's address. */
  readonly of: string;
  /** The vendor's admin token (feed:read). Sent only to `of`, never logged. */
  readonly token: string;
  /** The cursor to read after (null: none, the vendor answers a snapshot). */
  readonly after: string | null;
  /** The next page of a snapshot being read (then `after` is not sent). */
  readonly snapshot?: string | null;
  readonly limit: number;
  /** The mirror's time: vendor times are checked against it. */
  readonly now: number;
  readonly timeoutMs: number;
  /** Aborts the request (the follower stopping). */
  readonly signal?: AbortSignal;
}

/** The feed URL of a vendor (what `keyturn mirror check` prints, so without the token). */
export function feedUrl(of: string, after: string | null, limit: number, snapshot: string | null = null): string {
  const at = snapshot !== null ? `snapshot=${encodeURIComponent(snapshot)}&` : after !== null ? `after=${encodeURIComponent(after)}&` : "";
  return `${of}/api/v1/admin/feed?${at}limit=${limit}`;
}

/**
 * One page of the vendor's feed, checked (src/domain/mirror/feed-answer.ts). Every failure, from
 * an unreachable vendor to a refused token or a malformed answer, is a FeedProblem with a
 * printable reason; nothing of a failed page is returned.
 */
export async function fetchFeedPage(r: FeedRequest): Promise<FeedPage> {
  let res: Response;
  try {
    res = await fetch(feedUrl(r.of, r.after, r.limit, r.snapshot ?? null), {
      headers: { authorization: `Bearer ${r.token}`, accept: "application/json" },
      // A redirect would carry the token elsewhere, or mean the address is wrong: either way, stop.
      redirect: "manual",
      signal: r.signal ? AbortSignal.any([r.signal, AbortSignal.timeout(r.timeoutMs)]) : AbortSignal.timeout(r.timeoutMs),
    });
  } catch (e) {
    const name = (e as Error).name;
    throw new FeedProblem(
      name === "TimeoutError" || name === "AbortError"
        ? `the vendor did not answer within ${r.timeoutMs} ms`
        : `the vendor cannot be reached: ${escapeControl((e as Error).message, 300)}`,
    );
  }
  let text: string;
  try {
    text = await readLimited(res, MAX_ANSWER_BYTES);
  } catch (e) {
    if (e instanceof FeedProblem) throw e;
    throw new FeedProblem(`the vendor's answer broke off: ${escapeControl((e as Error).message, 300)}`);
  }
  if (res.status !== 200) throw new FeedProblem(refusalOf(res.status, text));
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new FeedProblem("the vendor's answer is not JSON");
  }
  return parseFeedAnswer(body, r.after, r.now);
}

function refusalOf(status: number, text: string): string {
  let code = "";
  try {
    const error = (JSON.parse(text) as { error?: unknown }).error;
    if (typeof error === "string") code = ` (${escapeControl(error, 60)})`;
  } catch {
    // not JSON: the status says enough
  }
  if (status === 401) return `the vendor refused the mirror token${code}: check --mirror-token`;
  if (status === 403) return `the mirror token lacks the feed:read scope${code}`;
  if (status >= 300 && status < 400) return `the vendor answered a redirect (HTTP ${status}): check --mirror-of`;
  if (status === 404) return `the vendor has no feed at this address (HTTP 404${code}): check --mirror-of`;
  return `the vendor answered HTTP ${status}${code}`;
}

async function readLimited(res: Response, max: number): Promise<string> {
  const declared = Number(res.headers.get("content-length") ?? "0");
  if (declared > max) {
    await res.body?.cancel();
    throw new FeedProblem(`the vendor's answer is larger than ${max} bytes`);
  }
  if (!res.body) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      throw new FeedProblem(`the vendor's answer is larger than ${max} bytes`);
    }
    chunks.push(value);
  }
  return new TextDecoder("utf-8", { fatal: false }).decode(Buffer.concat(chunks));
}
