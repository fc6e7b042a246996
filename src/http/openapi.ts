import type { TSchema } from "@sinclair/typebox";
import type { Variant } from "../config/variants";
import type { ErrorCode } from "../domain/errors";
import { ErrorBody } from "./answer-schemas";
import { API_PREFIX, type Endpoint } from "./endpoint";
import { MAX_JSON_BODY } from "./body";
import { MAX_URL_BYTES } from "./front-door";
import { STATUS_OF } from "./status";
import { DEVICE_HEADER, DEVICE_QUERY } from "../domain/releases/public-lanes";

/** Refusals any endpoint can give, whatever it does (invalid_request: a path and query over the limit). */
export const ALWAYS_ERRORS: readonly ErrorCode[] = ["rate_limited", "internal_error", "invalid_request"];

const HEADER_DOCS: Record<string, string> = {
  "Retry-After": "Whole seconds until the address's budget allows another request",
  "RateLimit-Policy": 'The budget this request counts against, e.g. "signin";q=20;w=60',
  RateLimit: 'What is left of it, e.g. "signin";r=5;t=42',
  "WWW-Authenticate": 'Bearer, or Bearer error="invalid_token" (RFC 6750)',
  ETag: "Strong validator derived from the bytes (the installer's: from the manifest's sha256)",
  "Cache-Control": "private, no-cache",
  "Accept-Ranges": "bytes",
  "Content-Range": "bytes a-b/length, or bytes */length on 416",
  Allow: "The methods the path answers",
};

/** Plain JSON Schema: TypeBox's symbol keys dropped. */
const plain = (schema: TSchema): Record<string, unknown> => JSON.parse(JSON.stringify(schema));

function headers(names: readonly string[]) {
  return Object.fromEntries(names.map((n) => [n, { description: HEADER_DOCS[n] ?? n, schema: { type: "string" } }]));
}

/** The error body with its `error` field narrowed to `codes`. */
function errorBodySchema(codes: readonly ErrorCode[]) {
  const schema = plain(ErrorBody) as { properties: Record<string, unknown> };
  schema.properties = { ...schema.properties, error: { type: "string", enum: codes } };
  return schema;
}

/**
 * One response per status, naming the error codes that give it; the error field enumerates them.
 * A HEAD answer has the status and headers of the GET's refusal and no body.
 */
function errorResponses(codes: readonly ErrorCode[], method: string) {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of [...new Set([...codes, ...ALWAYS_ERRORS])]) {
    const status = STATUS_OF[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Record<string, unknown> = {};
  for (const [status, list] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    const extra = [
      ...(status === 429 ? ["Retry-After"] : []),
      ...(status === 401 && list.some((c) => c.startsWith("entitlement_") || c === "admin_token_invalid") ? ["WWW-Authenticate"] : []),
      ...(status === 416 ? ["Content-Range"] : []),
    ];
    out[String(status)] = {
      description: list.join(", "),
      ...(extra.length ? { headers: headers(extra) } : {}),
      ...(method !== "head" ? { content: { "application/json": { schema: errorBodySchema(list) } } } : {}),
    };
  }
  return out;
}

/** How a public lane's visitor names its device hash, for rollouts (docs/public-lanes.md). */
const VISITOR_DEVICE = "On a public lane without a bearer: the visitor's device hash (43 base64url characters), which rollouts admit as an installation's";
const VISITOR_PARAMETERS = [
  { name: DEVICE_HEADER, in: "header", required: false, description: VISITOR_DEVICE, schema: { type: "string", pattern: "^[A-Za-z0-9_-]{43}$" } },
  { name: DEVICE_QUERY, in: "query", required: false, description: `${VISITOR_DEVICE} (without the ${DEVICE_HEADER} header)`, schema: { type: "string" } },
];

function operation(route: Endpoint, method: string) {
  const parameters = [
    ...(route.params ?? []).map((p) => ({
      name: p.name,
      in: "path",
      required: true,
      description: p.description,
      schema: p.values ? { type: "string", enum: p.values } : { type: "string" },
    })),
    ...(route.query ?? []).map((p) => ({
      name: p.name,
      in: "query",
      required: false,
      description: p.description,
      schema: p.values ? { type: "string", enum: p.values } : { type: "string" },
    })),
    ...queryParameters(route),
    ...(route.headers ?? []).map((h) => ({ name: h.name, in: "header", required: false, description: h.description, schema: plain(h.schema) })),
    ...(route.publicLanes ? VISITOR_PARAMETERS : []),
  ];
  const success: Record<string, unknown> = {};
  if (route.answer)
    success[String(route.status ?? 200)] = {
      description: "Success",
      headers: headers(["RateLimit-Policy", "RateLimit"]),
      ...(method !== "head" ? { content: { "application/json": { schema: plain(route.answer) } } } : {}),
    };
  for (const [status, a] of Object.entries(route.answers ?? {}))
    success[status] = {
      description: a.description,
      headers: headers([...(a.headers ?? []), "RateLimit-Policy", "RateLimit"]),
      ...(a.content && method !== "head" ? { content: a.content } : {}),
    };
  return {
    summary: method === "head" ? `The headers of GET ${route.path}, without the body` : route.summary,
    operationId: `${method}${route.path.replace(/[{}]/g, "").replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ?? "").toUpperCase())}`,
    // On a public lane (--public-lanes) the bearer may be left out: `{}` says so.
    security:
      route.auth === "entitlement"
        ? [{ bearer: [] }, ...(route.publicLanes ? [{}] : [])]
        : typeof route.auth === "object"
          ? [{ adminToken: [route.auth.scope] }]
          : [],
    ...(parameters.length ? { parameters } : {}),
    ...(route.body && method !== "head" ? { requestBody: { required: true, content: { "application/json": { schema: plain(route.body) } } } } : {}),
    ...(route.rawBody
      ? {
          requestBody: {
            required: true,
            description: route.rawBody.description,
            content: { [route.rawBody.type]: { schema: { type: "string", format: "binary" } } },
          },
        }
      : {}),
    responses: { ...success, ...errorResponses(route.errors, method) },
  };
}

/** An endpoint's query schema as OpenAPI query parameters. */
function queryParameters(route: Endpoint) {
  const schema = route.querySchema ? (plain(route.querySchema) as { properties?: Record<string, Record<string, unknown>>; required?: string[] }) : null;
  return Object.entries(schema?.properties ?? {}).map(([name, property]) => ({
    name,
    in: "query",
    required: schema?.required?.includes(name) ?? false,
    ...(typeof property.description === "string" ? { description: property.description } : {}),
    schema: property,
  }));
}

/** The OpenAPI 3.1 document of one variant's API, made from the route table (every GET also answers HEAD). */
export function openApiDocument(variant: Variant, endpoints: readonly Endpoint[], version: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  // The console's and portal's pages (another prefix) are not part of the API.
  for (const e of endpoints) {
    if ((e.prefix ?? API_PREFIX) !== API_PREFIX) continue;
    const item = (paths[e.path] ??= {});
    item[e.method.toLowerCase()] = operation(e, e.method.toLowerCase());
    if (e.method === "GET") item.head = operation(e, "head");
  }
  return {
    openapi: "3.1.0",
    info: {
      title: `keyturn Update and License API (${variant.name})`,
      version,
      description: `Licensing and updates for desktop programs. Every answer that is not a file is JSON; every refusal is the error body, with the status its code maps to. Bodies are JSON up to ${MAX_JSON_BODY / 1024} KiB; a path and query over ${MAX_URL_BYTES} bytes is 400 invalid_request. A method a path does not answer is 405 method_not_allowed with an Allow header naming those it does (components.responses.MethodNotAllowed). The HTTP server itself, before keyturn sees the request, answers 431 with no body to headers over its limit, and 413 with no body to a body declared in megabytes.`,
    },
    // Relative: resolved against wherever the document was fetched from (the site, or a mirror).
    servers: [{ url: "/api/v1" }],
    components: {
      securitySchemes: {
        bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT", description: "Authorization: Bearer <entitlement token>" },
        adminToken: {
          type: "http",
          scheme: "bearer",
          description:
            "Authorization: Bearer kta_… (an admin token, made by `keyturn admin-token create`). The operation's scope, or `admin`, is required: without it 403 insufficient_scope.",
        },
      },
      schemas: { ErrorBody: plain(ErrorBody) },
      responses: {
        MethodNotAllowed: {
          description: "method_not_allowed: the path answers only the methods named in Allow",
          headers: headers(["Allow"]),
          content: { "application/json": { schema: errorBodySchema(["method_not_allowed"]) } },
        },
      },
    },
    paths,
  };
}
