import { fullPath, type Endpoint } from "./endpoint";

/** The methods a declaration can answer, in the order an `Allow` header lists them. */
const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;

/** One segment level of the index: its literal children, its parameter child, its endpoints by method. */
interface Node {
  readonly literal: Map<string, Node>;
  param: Node | null;
  readonly endpoints: Map<string, Endpoint>;
}

/** How many lookups `find` keeps, and the longest path it keeps one for. */
const FOUND_KEPT = 4096;
const MAX_KEPT_PATH = 256;

const node = (): Node => ({ literal: new Map(), param: null, endpoints: new Map() });

/**
 * keyturn's own index of its declarations: which endpoint answers a method and a path, found before
 * Elysia routes the request (the rate budget is the endpoint's, charged before anything else), and
 * which methods a path answers (405's `Allow`). Built from the declarations alone, so it never reads
 * Elysia's router, whose tables are private. A `{param}` segment matches one non-empty segment; a
 * literal segment is preferred to a parameter at each level, as Elysia's router does.
 */
export function routeIndex(endpoints: readonly Endpoint[]) {
  const root = node();
  const exact = new Map<string, Map<string, Endpoint>>();
  for (const e of endpoints) {
    const path = fullPath(e);
    if (!path.includes("{")) {
      let methods = exact.get(path);
      if (!methods) exact.set(path, (methods = new Map()));
      methods.set(e.method, e);
      continue;
    }
    let at = root;
    for (const segment of path.split("/").slice(1)) {
      if (segment.startsWith("{")) at = at.param ??= node();
      else {
        let next = at.literal.get(segment);
        if (!next) at.literal.set(segment, (next = node()));
        at = next;
      }
    }
    at.endpoints.set(e.method, e);
  }

  /** The endpoints of the deepest match of `segments` from `index`, literal segments first. */
  const walk = (at: Node, segments: readonly string[], index: number, method: string | null): Map<string, Endpoint> | null => {
    if (index === segments.length) return at.endpoints.size > 0 && (method === null || at.endpoints.has(method)) ? at.endpoints : null;
    const segment = segments[index]!;
    const literal = at.literal.get(segment);
    const found = literal ? walk(literal, segments, index + 1, method) : null;
    if (found || !at.param || segment === "") return found;
    return walk(at.param, segments, index + 1, method);
  };

  const methodsAt = (path: string, method: string | null): ReadonlyMap<string, Endpoint> | null => {
    const methods = exact.get(path);
    if (methods && (method === null || methods.has(method))) return methods;
    return walk(root, path.split("/").slice(1), 0, method);
  };

  // Every request is looked up here before Elysia routes it, so the answers for paths seen before
  // are kept: a walk splits the path and costs about 3 µs, a kept answer one Map read. Only short
  // paths are kept and the whole map is dropped when full, so hostile URLs bound its memory
  // (FOUND_KEPT × MAX_KEPT_PATH characters) and only cost the walk they would cost anyway.
  const found = new Map<string, Endpoint | null>();

  return {
    /** The endpoint declared for this method (HEAD: its GET) and path, if any. */
    find(method: string, path: string): Endpoint | undefined {
      const m = method === "HEAD" ? "GET" : method;
      if (path.length > MAX_KEPT_PATH) return methodsAt(path, m)?.get(m);
      const key = `${m} ${path}`;
      const kept = found.get(key);
      if (kept !== undefined) return kept ?? undefined;
      const e = methodsAt(path, m)?.get(m) ?? null;
      if (found.size >= FOUND_KEPT) found.clear();
      found.set(key, e);
      return e ?? undefined;
    },
    /** The endpoints answering this path under any method, in `Allow` order (empty: nothing is here). */
    answering(path: string): Endpoint[] {
      const found: Endpoint[] = [];
      const methods = exact.get(path);
      for (const m of METHODS) {
        const e = methods?.get(m) ?? walk(root, path.split("/").slice(1), 0, m)?.get(m);
        if (e) found.push(e);
      }
      return found;
    },
  };
}

export type RouteIndex = ReturnType<typeof routeIndex>;
