import { timingSafeEqual } from "node:crypto";
import type { Session } from "../domain/console-sessions";
import { KeyturnError } from "../domain/errors";
import type { Outcome } from "../console/deps";
import { html } from "../console/html";
import { plainPage } from "../console/layout";
import { parseCookies, setCookie } from "./cookies";
import type { Call } from "./endpoint";
import { STATUS_OF } from "./status";

/**
 * What every console and portal answer carries: a CSP that allows only the site's own files (no
 * inline script or style), no framing (clickjacking), no sniffing, no referrer to other sites, no caching.
 */
export const WEB_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  // same-origin, not no-referrer: with no-referrer Chromium sends `Origin: null` on the site's own form POSTs.
  "referrer-policy": "same-origin",
  "cache-control": "no-store",
});

const MAX_FORM_BYTES = 32 * 1024;

export type SessionKind = "console" | "portal";

/** Under HTTPS the cookie is `__Host-` prefixed and Secure (bound to this origin, never sent in clear). */
const secure = (request: Request) => request.url.startsWith("https:");

export function cookieName(request: Request, kind: SessionKind): string {
  return secure(request) ? `__Host-keyturn-${kind}` : `keyturn-${kind}`;
}

/** The session cookie's value (read with Elysia's cookie parser), or null. */
export async function sessionCookie(request: Request, kind: SessionKind): Promise<string | null> {
  return (await parseCookies(request.headers.get("cookie")))[cookieName(request, kind)] ?? null;
}

/** Sets (or, with null, clears) the session cookie: HttpOnly, SameSite=Strict, Path=/, Secure under HTTPS. */
export function setSessionCookie(request: Request, kind: SessionKind, secret: string | null, maxAgeSeconds = 0): string {
  return setCookie(cookieName(request, kind), secret ?? "", { path: "/", httpOnly: true, sameSite: "strict", secure: secure(request), maxAge: secret === null ? 0 : Math.max(0, Math.floor(maxAgeSeconds)) });
}

const pendingName = (request: Request) => (secure(request) ? "__Host-keyturn-oidc" : "keyturn-oidc");

/** The state of an OpenID sign-in under way, in a SameSite=Lax cookie: it must come back through the issuer's cross-site redirect. */
export function setPendingCookie(request: Request, state: string | null, maxAgeSeconds = 0): string {
  return setCookie(pendingName(request), state ?? "", { path: "/", httpOnly: true, sameSite: "lax", secure: secure(request), maxAge: state === null ? 0 : Math.floor(maxAgeSeconds) });
}

export async function pendingCookie(call: Call): Promise<string | null> {
  return (await call.cookies())[pendingName(call.request)] ?? null;
}

/** The session of a page declared with a required session (the lifecycle answered the sign-in otherwise). */
export function signedIn(session: Session | null): Session {
  if (session === null) throw new Error("A page that needs a session was answered without one.");
  return session;
}

/** The answer of a page or an action: HTML with the web headers, or 303 See Other after a change. */
export function webAnswer(outcome: Outcome, extra: Record<string, string> = {}): Response {
  if ("redirect" in outcome) return new Response(null, { status: 303, headers: { ...WEB_HEADERS, location: outcome.redirect, ...extra } });
  return new Response(outcome.page.text, { status: outcome.status ?? 200, headers: { ...WEB_HEADERS, "content-type": "text/html;charset=utf-8", ...extra } });
}

/**
 * A POSTed form, accepted only from this site: the Origin (or, without one, Sec-Fetch-Site) must be
 * this origin, and with a session the form's csrf field must be the session's token. A cross-site
 * form is refused before anything is done.
 */
export async function readForm(request: Request, session: Session | null): Promise<URLSearchParams> {
  const origin = request.headers.get("origin");
  const site = request.headers.get("sec-fetch-site");
  const sameOrigin = origin !== null ? origin === new URL(request.url).origin : site === "same-origin";
  if (!sameOrigin) throw new KeyturnError("invalid_request", "This form was not sent from this site's pages.");
  const type = request.headers.get("content-type") ?? "";
  if (!type.startsWith("application/x-www-form-urlencoded")) throw new KeyturnError("unsupported_media_type", "Send the form as application/x-www-form-urlencoded.");
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > MAX_FORM_BYTES) throw new KeyturnError("payload_too_large", `A form is at most ${MAX_FORM_BYTES / 1024} KiB.`);
  const text = await request.text();
  if (text.length > MAX_FORM_BYTES) throw new KeyturnError("payload_too_large", `A form is at most ${MAX_FORM_BYTES / 1024} KiB.`);
  const form = new URLSearchParams(text);
  if (session !== null) {
    const given = Buffer.from(form.get("csrf") ?? "");
    const expected = Buffer.from(session.csrf);
    if (given.length !== expected.length || !timingSafeEqual(given, expected))
      throw new KeyturnError("invalid_request", "This form is stale or was not made by this site: open the page again.");
  }
  return form;
}

/** The query string's parameters, bounded (the front door already caps the URL's length). */
export const queryParams = (query: string) => new URLSearchParams(query);

/** A refusal as a page: its status (from the code), its message escaped and its audit reference. */
export function refusalPage(error: KeyturnError, back: string): Response {
  const body = html`<p class="notice error" role="alert">${error.message}</p><p class="muted">Reference: <code>${error.ref ?? "none"}</code> (${error.code})</p><p><a href="${back}">Back</a></p>`;
  return webAnswer({ page: plainPage(error.code === "insufficient_scope" ? "Not allowed" : "Refused", body), status: STATUS_OF[error.code] });
}
