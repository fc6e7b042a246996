import { parseCookie, serializeCookie, type CookieOptions } from "elysia/cookies";

/** A request's cookies by name, read with Elysia's cookie parser (percent-decoded; unsigned). */
export async function parseCookies(header: string | null): Promise<Readonly<Record<string, string>>> {
  const jar = await parseCookie({ headers: {}, status: 200 }, header);
  const out: Record<string, string> = {};
  for (const name in jar) {
    const value = jar[name]!.value;
    if (typeof value === "string") out[name] = value;
  }
  return out;
}

/** One Set-Cookie header value, written by Elysia's cookie serialiser. */
export function setCookie(name: string, value: string, options: CookieOptions = {}): string {
  const header = serializeCookie({ [name]: { ...options, value } });
  return Array.isArray(header) ? header[0]! : header!;
}
