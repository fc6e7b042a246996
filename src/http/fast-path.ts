import type { Variant } from "../config/variants";
import type { frontDoor } from "./front-door";
import type { UpdateHandler, UpdateParams } from "./routes/updates";

type Refuse = (error: unknown, request: Request, routeNotFound: boolean) => Promise<Response>;
/** A route's whole work for one request, the same one Elysia's route calls. */
export type RouteHandler = (request: Request) => Promise<Response>;

/** A route of a fixed method and path (below the API prefix). */
export interface ExactRoute {
  readonly method: "GET" | "POST";
  readonly path: string;
  readonly handler: RouteHandler;
}

/**
 * The busiest requests answered without Elysia's per-request routing and response mapping, which
 * cost more than all of keyturn's own work on an update file (and a third of an
 * entitlements/current): GET and HEAD of the update files, and the routes of `exact` (method and
 * path below the API prefix). Only plain URLs come here (no `%`; for updates the route's exact
 * number of segments, none empty); anything else goes to Elysia, whose routes run the same
 * handlers. The request meets the same front door, handler and refusal answer either way.
 */
export function fastPath(o: {
  readonly apiPrefix: string;
  readonly variant: Variant;
  readonly front: ReturnType<typeof frontDoor>;
  readonly refuse: Refuse;
  readonly serveUpdate: UpdateHandler;
  readonly exact: readonly ExactRoute[];
}) {
  const updatePrefix = `${o.apiPrefix}/updates/`;
  const withProduct = o.variant.products.length > 0;
  const segments = withProduct ? 4 : 3;
  const exact = new Map(o.exact.map((r) => [`${r.method} ${o.apiPrefix}${r.path}`, r.handler]));

  /** The handler of a plain URL this path answers, else null. */
  const match = (method: string, url: string): RouteHandler | null => {
    const pathStart = url.indexOf("/", url.indexOf("//") + 2);
    let end = url.indexOf("?", pathStart);
    if (end < 0) end = url.length;
    const hash = url.indexOf("#", pathStart);
    if (hash >= 0 && hash < end) end = hash;
    const percent = url.indexOf("%", pathStart);
    if (percent >= 0 && percent < end) return null;
    if (url.startsWith(updatePrefix, pathStart)) {
      if (method !== "GET" && method !== "HEAD") return null;
      const params = updateParams(url.slice(pathStart + updatePrefix.length, end));
      return params && ((request) => o.serveUpdate(request, params));
    }
    return exact.get(`${method} ${url.slice(pathStart, end)}`) ?? null;
  };

  const updateParams = (rest: string): UpdateParams | null => {
    const parts = rest.split("/");
    if (parts.length !== segments || parts.includes("")) return null;
    return withProduct
      ? { product: parts[0], channel: parts[1], platform: parts[2], file: parts[3] }
      : { product: undefined, channel: parts[0], platform: parts[1], file: parts[2] };
  };

  const answer = async (request: Request, handler: RouteHandler): Promise<Response> => {
    const state = o.front.begin(request);
    let response: Response;
    let rateHeaders: Record<string, string> | null = null;
    try {
      const admitted = await o.front.admit(request, state);
      rateHeaders = admitted.limited ? null : admitted.headers;
      response = admitted.limited ?? (await handler(request));
    } catch (e) {
      o.front.track(request, state);
      response = await o.refuse(e, request, false);
    }
    if (rateHeaders) for (const name in rateHeaders) response.headers.set(name, rateHeaders[name]!);
    if (request.method === "HEAD") response = await withoutBody(response);
    o.front.answered(request, state, response.status);
    return response;
  };

  /** The answer of a request this path routes, or null when Elysia must route it. */
  return (request: Request): Promise<Response> | null => {
    const handler = match(request.method, request.url);
    return handler ? answer(request, handler) : null;
  };
}

/** HEAD: the GET's status and headers with Content-Length of the body not sent (as Elysia answers HEAD). */
async function withoutBody(response: Response): Promise<Response> {
  const length = response.headers.get("content-length") ?? String(response.body ? (await response.arrayBuffer()).byteLength : 0);
  response.headers.set("content-length", length);
  return new Response(null, { status: response.status, statusText: response.statusText, headers: response.headers });
}
