import type { SiteOrigin } from "../config/site-origin";
import type { Variant } from "../config/variants";
import { actorOf, type AdminCaller, type AdminDeps } from "../domain/admin/deps";
import type { Clock } from "../domain/clock";
import type { ConsoleSessions, Session } from "../domain/console-sessions";
import type { Licensing } from "../domain/licensing";
import type { ReleaseHolder } from "../domain/releases/holder";
import type { ReleaseControls } from "../domain/releases/release-controls";
import type { ReleaseSelection } from "../domain/releases/release-selection";
import type { Html } from "./html";

/** What the console and portal pages are made from: the same services the admin API and the update path use. */
export interface ConsoleDeps {
  readonly variant: Variant;
  readonly admin: AdminDeps;
  readonly sessions: ConsoleSessions;
  readonly licensing: Licensing;
  readonly releases: ReleaseHolder;
  readonly controls: ReleaseControls;
  readonly selection: ReleaseSelection;
  readonly clock: Clock;
  /** The public origin (--base-url): forms' Origin check, cookies, absolute links. */
  readonly site: SiteOrigin;
}

/** What a page or an action answers: a page (with its status) or a redirect (after a change: POST, redirect, GET). */
export type Outcome = { readonly page: Html; readonly status?: number } | { readonly redirect: string };

/**
 * The admin caller a console session acts as: its admin token, or `staff:<subject>` for a staff
 * member, so audit lines name who did it as the admin API's would.
 */
export function callerOf(session: Session, address: string | null): AdminCaller {
  const tokenId = session.tokenId ?? (session.subject !== null ? `staff:${session.subject}` : null);
  return { principal: { tokenId, name: session.name, scopes: session.scopes }, address };
}

/** Who a session's audit lines name: the console's admin token or staff member, or the portal's licence (as domain/portal.ts names it). */
export function actorOfSession(session: Session): string {
  if (session.kind === "portal") return actorOf({ tokenId: `portal:${session.licenseId ?? session.subject}`, name: "customer", scopes: [] });
  return actorOf(callerOf(session, null).principal);
}
