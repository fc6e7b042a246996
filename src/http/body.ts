import type { TSchema } from "@sinclair/typebox";
import { checkOf, describeError } from "../domain/decode";
import { KeyturnError } from "../domain/errors";

/** JSON bodies larger than this are refused with 413 before they are read in full. */
export const MAX_JSON_BODY = 16 * 1024;

/**
 * Reads a JSON body within the limits: size (413), media type (415), UTF-8 and JSON syntax (400).
 * The schema is Elysia's `body` validator on the route; domain/decode.ts words its refusal.
 */
export async function readJsonBody(request: Request): Promise<unknown> {
  return parseJson(await readLimited(request));
}

async function readLimited(request: Request): Promise<string> {
  const type = request.headers.get("content-type");
  const declared = request.headers.get("content-length");
  // No body at all is a missing body (400), not a body of the wrong type: there is no type to refuse.
  if (type === null && (!request.body || declared === "0")) throw needsBody();
  if (!/^application\/json\s*(;|$)/i.test(type ?? ""))
    throw new KeyturnError("unsupported_media_type", "The body must be JSON, sent with Content-Type: application/json.");
  if (declared !== null && Number(declared) > MAX_JSON_BODY) throw tooLarge();
  if (!request.body) throw needsBody();
  return readTextWithin(request, MAX_JSON_BODY, tooLarge);
}

/**
 * A body as UTF-8 text of at most `limit` bytes (`tooLarge`, 413, past it; invalid_request when it
 * is not UTF-8). A declared length is the most the runtime reads (the framing ends the body there):
 * read in one call. A chunked body has none, so it is counted as it arrives.
 */
export async function readTextWithin(request: Request, limit: number, tooLarge: () => KeyturnError): Promise<string> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) throw tooLarge();
  if (!request.body) return "";
  if (declared !== null) return decodeUtf8(new Uint8Array(await request.arrayBuffer().catch(unreadable)));
  return decodeUtf8(await readWithin(request.body, limit, tooLarge));
}

/**
 * A body's bytes counted as they arrive: past `limit` the rest is not read (`tooLarge`, 413); a
 * connection that ends mid-body is the client's fault (invalid_request).
 */
export async function readWithin(body: ReadableStream<Uint8Array>, limit: number, tooLarge: () => KeyturnError): Promise<Uint8Array> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read().catch(unreadable);
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

function decodeUtf8(bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new KeyturnError("invalid_request", "The body is not valid UTF-8.");
  }
}

function parseJson(text: string): unknown {
  if (text.trim() === "") throw needsBody();
  try {
    return JSON.parse(text);
  } catch {
    throw new KeyturnError("invalid_request", "The body is not valid JSON.");
  }
}

/** The client closed the connection mid-body or framed it wrongly: its fault, not ours (no internal_error). */
function unreadable(): never {
  throw new KeyturnError("invalid_request", "The body could not be read: the connection closed before its end, or its framing is malformed.");
}

function needsBody(): KeyturnError {
  return new KeyturnError("invalid_request", "The request needs a JSON body.");
}

function tooLarge(): KeyturnError {
  return new KeyturnError("payload_too_large", `JSON bodies are limited to ${MAX_JSON_BODY} bytes.`);
}

/** Checks a query string against a closed object schema of strings; throws invalid_request naming the parameter. */
export type QueryReader = (query: string) => Readonly<Record<string, string>>;

/**
 * The query string is within the URL limit when this runs; a declared parameter may appear once.
 * A parameter the schema does not name is refused, unless the schema says `additionalProperties:
 * true` (where real clients add their own, such as cache busters): then it is ignored.
 */
export function queryReader(schema: TSchema): QueryReader {
  const check = checkOf(schema);
  const known = new Set(Object.keys((schema as { properties?: object }).properties ?? {}));
  const open = (schema as { additionalProperties?: unknown }).additionalProperties === true;
  return (query) => {
    const values: Record<string, string> = {};
    if (query !== "")
      for (const [name, value] of new URLSearchParams(query)) {
        if (!known.has(name)) {
          if (open) continue;
          throw new KeyturnError("invalid_request", `Unknown query parameter: ${name.slice(0, 64)}.`);
        }
        if (Object.hasOwn(values, name)) throw new KeyturnError("invalid_request", `The query parameter ${name} is given more than once.`);
        values[name] = value;
      }
    if (check.Check(values)) return values;
    // In the words the console and the CLI get for the same model (domain/decode.ts).
    throw new KeyturnError("invalid_request", describeError(check, values));
  };
}
