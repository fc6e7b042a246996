import { KeyturnError } from "../domain/errors";
import { NO_TOKEN } from "./respond";

/** The token of `Authorization: Bearer <token>`. Cookies are never read. */
export function bearerToken(request: Request): string {
  const header = request.headers.get("authorization");
  // No header, or another scheme (Basic, …): no token was sent at all (RFC 6750: plain challenge).
  if (!header || !/^Bearer(\s|$)/i.test(header)) throw new KeyturnError("entitlement_invalid", NO_TOKEN);
  const m = /^Bearer +([A-Za-z0-9_.~+/=-]+) *$/i.exec(header);
  if (!m) throw new KeyturnError("entitlement_invalid", "Not a token this site signed, or not for this site.");
  return m[1]!;
}
