import { KeyturnError } from "../errors";
import { sha256Hex } from "../ids";
import { canonicalJson } from "./input";

/**
 * Opaque page cursors, bound to the query they continue: the cursor carries a hash of the query
 * (without the cursor) and its position. A cursor of another query, or not one of ours, is
 * invalid_request. Positions are keyset positions (the last row's sort key), so a made-up position
 * shows nothing the query could not show anyway; no secret is needed, and cursors stay valid
 * across processes and restarts.
 */
export function encodeCursor(query: Record<string, unknown>, position: unknown): string {
  return Buffer.from(JSON.stringify({ q: queryHash(query), p: position })).toString("base64url");
}

export function decodeCursor<P>(cursor: unknown, query: Record<string, unknown>, isPosition: (p: unknown) => p is P): P | undefined {
  if (cursor === undefined) return undefined;
  const invalid = () => new KeyturnError("invalid_request", "cursor is not a cursor of this query.");
  if (typeof cursor !== "string" || cursor.length > 500 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalid();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    throw invalid();
  }
  const c = parsed as { q?: unknown; p?: unknown } | null;
  if (typeof c !== "object" || c === null || c.q !== queryHash(query) || !isPosition(c.p)) throw invalid();
  return c.p;
}

function queryHash(query: Record<string, unknown>): string {
  const defined = Object.fromEntries(Object.entries(query).filter(([, v]) => v !== undefined));
  return sha256Hex(canonicalJson(defined)).slice(0, 16);
}
