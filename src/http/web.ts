import { timingSafeEqual } from "node:crypto";
import type { Session } from "../domain/console-sessions";
import { KeyturnError } from "../domain/errors";
import type { Outcome } from "../console/deps";
import { html } from "../console/html";
import { plainPage } from "../console/layout";
import { cookieNameOn, sentFromSite, type SiteOrigin } from "../config/site-origin";
import { readTextWithin } from "./body";
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

/** The session cookie's name: `__Host-` prefixed when --base-url is https (site-origin.ts). */
export function cookieName(site: SiteOrigin, kind: SessionKind): string {
  return cookieNameOn(site, `keyturn-${kind}`);
}

/** The session cookie's value (read with Elysia's cookie parser), or null. */
export async function sessionCookie(request: Request, site: SiteOrigin, kind: SessionKind): Promise<string | null> {
  return (await parseCookies(request.headers.get("cookie")))[cookieName(site, kind)] ?? null;
}

/** Sets (or, with null, clears) the session cookie: HttpOnly, SameSite=Strict, Path=/, Secure when --base-url is https. */
export function setSessionCookie(site: SiteOrigin, kind: SessionKind, secret: string | null, maxAgeSeconds = 0): string {
  return setCookie(cookieName(site, kind), secret ?? "", {
    path: "/",
    httpOnly: true,
    sameSite: "strict",
    secure: site.secure,
    maxAge: secret === null ? 0 : Math.max(0, Math.floor(maxAgeSeconds)),
  });
}

const pendingName = (site: SiteOrigin) => cookieNameOn(site, "keyturn-oidc");

/** The state of an OpenID sign-in under way, in a SameSite=Lax cookie: it must come back through the issuer's cross-site redirect. */
export function setPendingCookie(site: SiteOrigin, state: string | null, maxAgeSeconds = 0): string {
  return setCookie(pendingName(site), state ?? "", {
    path: "/",
    httpOnly: true,
    sameSite: "lax",
    secure: site.secure,
    maxAge: state === null ? 0 : Math.floor(maxAgeSeconds),
  });
}

export async function pendingCookie(call: Call, site: SiteOrigin): Promise<string | null> {
  return (await call.cookies())[pendingName(site)] ?? null;
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

const formTooLarge = () => new KeyturnError("payload_too_large", `A form is at most ${MAX_FORM_BYTES / 1024} KiB.`);

/**
 * A POSTed form, accepted only from this site: the Origin (or, without one, Sec-Fetch-Site) must be
 * the site's public origin (--base-url, site-origin.ts), and with a session the form's csrf field must be the session's token. A cross-site
 * form is refused before anything is done.
 */
export async function readForm(site: SiteOrigin, request: Request, session: Session | null): Promise<URLSearchParams> {
  if (!sentFromSite(site, request.headers.get("origin"), request.headers.get("sec-fetch-site")))
    throw new KeyturnError("invalid_request", "This form was not sent from this site's pages.");
  const type = request.headers.get("content-type") ?? "";
  if (!type.startsWith("application/x-www-form-urlencoded"))
    throw new KeyturnError("unsupported_media_type", "Send the form as application/x-www-form-urlencoded.");
  const form = new URLSearchParams(await readTextWithin(request, MAX_FORM_BYTES, formTooLarge));
  if (session !== null) {
    const given = Buffer.from(form.get("csrf") ?? "");
    const expected = Buffer.from(session.csrf);
    if (given.length !== expected.length || !timingSafeEqual(given, expected))
      throw new KeyturnError("invalid_request", "This form is stale or was not made by this site: open the page again.");
  }
  return form;
}

/** A refusal as a page: its status (from the code), its message escaped and its audit reference. */
export function refusalPage(error: KeyturnError, back: string): Response {
  const body = html`<p class="notice error" role="alert">${error.message}</p><p class="muted">Reference: <code>${error.ref ?? "none"}</code> (${error.code})</p><p><a href="${back}">Back</a></p>`;
  return webAnswer({ page: plainPage(error.code === "insufficient_scope" ? "Not allowed" : "Refused", body), status: STATUS_OF[error.code] });
}
