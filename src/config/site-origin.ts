/**
 * The site's public origin is `--base-url`, whoever terminates TLS (keyturn with --tls-cert, or a
 * proxy in front of a keyturn that sees only plain HTTP): the Origin a browser sends with the site's
 * own forms, the cookies' Secure flag and `__Host-` prefix, the OpenID redirect URI and every
 * absolute link are derived from it, never from the request's URL or its Host header (behind a
 * proxy those say `http://` and the proxy's upstream address; a Host is the client's to choose).
 */
export interface SiteOrigin {
  /** `https://updates.example.com` (scheme, host and port: what a browser sends as Origin). */
  readonly origin: string;
  /** The base URL as configured, without a trailing slash (it may have a path). */
  readonly baseUrl: string;
  /** https: cookies are Secure and `__Host-` prefixed (bound to this origin, never sent in clear). */
  readonly secure: boolean;
}

export function siteOrigin(baseUrl: string): SiteOrigin {
  const url = new URL(baseUrl);
  return Object.freeze({ origin: url.origin, baseUrl: baseUrl.replace(/\/+$/, ""), secure: url.protocol === "https:" });
}

/** A cookie's name on this site: `__Host-<name>` under https (the browser then requires Secure, Path=/ and no Domain). */
export const cookieNameOn = (site: SiteOrigin, name: string): string => (site.secure ? `__Host-${name}` : name);

/** An absolute address on this site, for a path of its own (`/console/oidc/callback`). */
export const absoluteUrl = (site: SiteOrigin, path: string): string => `${site.baseUrl}${path}`;

/**
 * Whether a form POST comes from this site's pages: its Origin is the site's origin; a request without
 * Origin counts only when the browser says `Sec-Fetch-Site: same-origin` (neither header: refused).
 */
export function sentFromSite(site: SiteOrigin, origin: string | null, fetchSite: string | null): boolean {
  return origin !== null ? origin === site.origin : fetchSite === "same-origin";
}
