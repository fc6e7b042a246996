import type { Variant } from "../config/variants";
import type { frontDoor } from "./front-door";
import type { UpdateHandler, UpdateParams } from "./routes/updates";

type Refuse = (error: unknown, request: Request, routeNotFound: boolean) => Promise<Response>;

/**
 * The update files (GET and HEAD of manifest, signature and installer) answered without Elysia's
 * per-request routing and response mapping, which cost more than all of keyturn's own work on
 * these requests. Only plain URLs come here (the route's exact number of segments, none empty, no
 * `%`); anything else goes to Elysia, whose update route runs the same handler. The request meets
 * the same front door, bearer check, handler and refusal answer either way.
 */
export function updateFastPath(o: {
  readonly apiPrefix: string;
  readonly variant: Variant;
  readonly front: ReturnType<typeof frontDoor>;
  readonly refuse: Refuse;
  readonly serve: UpdateHandler;
}) {
  const prefix = `${o.apiPrefix}/updates/`;
  const withProduct = o.variant.products.length > 0;
  const segments = withProduct ? 4 : 3;

  /** The route's parameters when the URL is a plain update path, else null. */
  const match = (url: string): UpdateParams | null => {
    const pathStart = url.indexOf("/", url.indexOf("//") + 2);
    if (!url.startsWith(prefix, pathStart)) return null;
    const from = pathStart + prefix.length;
    let end = url.indexOf("?", from);
    if (end < 0) end = url.length;
    const hash = url.indexOf("#", from);
    if (hash >= 0 && hash < end) end = hash;
    const percent = url.indexOf("%", from);
    if (percent >= 0 && percent < end) return null;
    const parts = url.slice(from, end).split("/");
    if (parts.length !== segments || parts.includes("")) return null;
    return withProduct
      ? { product: parts[0], channel: parts[1], platform: parts[2], file: parts[3] }
      : { product: undefined, channel: parts[0], platform: parts[1], file: parts[2] };
  };

  const answer = async (request: Request, params: UpdateParams): Promise<Response> => {
    const state = o.front.begin(request);
    let response: Response;
    let rateHeaders: Record<string, string> | null = null;
    try {
      const admitted = await o.front.admit(request, state);
      rateHeaders = admitted.limited ? null : admitted.headers;
      response = admitted.limited ?? (await o.serve(request, params));
    } catch (e) {
      o.front.track(request, state);
      response = await o.refuse(e, request, false);
    }
    if (rateHeaders) for (const name in rateHeaders) response.headers.set(name, rateHeaders[name]!);
    if (request.method === "HEAD") response = await withoutBody(response);
    o.front.answered(request, state, response.status);
    return response;
  };

  /** The answer of an update request, or null when Elysia must route it. */
  return (request: Request): Promise<Response> | null => {
    if (request.method !== "GET" && request.method !== "HEAD") return null;
    const params = match(request.url);
    return params ? answer(request, params) : null;
  };
}

/** HEAD: the GET's status and headers with Content-Length of the body not sent (as Elysia answers HEAD). */
async function withoutBody(response: Response): Promise<Response> {
  const length = response.headers.get("content-length") ?? String(response.body ? (await response.arrayBuffer()).byteLength : 0);
  response.headers.set("content-length", length);
  return new Response(null, { status: response.status, statusText: response.statusText, headers: response.headers });
}
