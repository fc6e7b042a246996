import { KeyturnError } from "../domain/errors";

const SPACE = 32;

/**
 * The token of `Authorization: Bearer <token>` (spaces around it allowed). Cookies are never read.
 * The token's characters are not checked here: only a string the verifier accepts passes, and
 * anything else is refused with the same answer a malformed token gets.
 */
export function bearerToken(request: Request, kind: "entitlement" | "admin" = "entitlement"): string {
  const code = kind === "admin" ? "admin_token_invalid" : "entitlement_invalid";
  const header = request.headers.get("authorization");
  // No header, or another scheme (Basic, …): no token was sent at all (RFC 6750: plain challenge).
  if (!header || !/^Bearer(\s|$)/i.test(header)) {
    const missing = new KeyturnError(code, `This request needs an Authorization: Bearer <${kind} token> header.`);
    missing.credentialsMissing = true;
    throw missing;
  }
  let start = 6;
  while (header.charCodeAt(start) === SPACE) start++;
  let end = header.length;
  while (end > start && header.charCodeAt(end - 1) === SPACE) end--;
  if (start === 6 || start === end)
    throw new KeyturnError(code, kind === "admin" ? "Not an admin token of this site." : "Not a token this site signed, or not for this site.");
  return header.slice(start, end);
}
