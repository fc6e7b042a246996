import { Type } from "@sinclair/typebox";
import type { ConsoleDeps } from "../../console/deps";
import { endSessionAction, SESSIONS, sessionsPage } from "../../console/pages/sessions";
import { endConsoleSession, listConsoleSessions } from "../../domain/admin/console-sessions";
import * as S from "../admin-schemas";
import { endpoint, type Endpoint, type ParamDoc } from "../endpoint";
import { json } from "../respond";
import { consolePage } from "./console";
import { ADMIN_ERRORS } from "./shared";

const SESSION_ID: ParamDoc = { name: "id", description: "The console session's id (cs_…), as the list gives it" };
const { Timestamp, Nullable } = S;

const ConsoleSessionView = Type.Object(
  {
    id: Type.String({ pattern: "^cs_[0-9a-f]{24}$" }),
    kind: Type.Union([Type.Literal("token"), Type.Literal("staff")], {
      description: "token: opened with an admin token; staff: a staff member through the OpenID issuer",
    }),
    name: Type.String(),
    tokenId: Nullable(Type.String({ pattern: "^tok_" })),
    subject: Nullable(Type.String({ description: "The staff member's subject at the issuer" })),
    groups: Nullable(
      Type.Array(Type.String(), { description: "A staff session's groups (those --console-groups names) as the issuer asserted them at sign-in" }),
    ),
    scopes: Type.Array(Type.String(), { description: "The scopes it holds now: a staff session's from its groups under the site's --console-groups" }),
    created: Timestamp,
    expires: Type.String({ format: "date-time", description: "At the latest: a working day, the admin token's expiry, or the issuer's ID token's" }),
  },
  { additionalProperties: false },
);
const ConsoleSessionList = Type.Object({ ok: Type.Literal(true), sessions: Type.Array(ConsoleSessionView) });
const ConsoleSessionEnded = Type.Object({ ok: Type.Literal(true), session: ConsoleSessionView });

/**
 * The console sessions open now and ending one: under /admin (scope admin) and as a console page
 * (`/console/sessions`, a session holding admin). Ending a session signs it out at its next request.
 */
export function adminConsoleSessionEndpoints(deps: ConsoleDeps): Endpoint[] {
  return [
    endpoint({
      method: "GET",
      path: "/admin/console-sessions",
      summary: "The console sessions open now, newest first, with the scopes each holds now",
      auth: { scope: "admin" },
      budget: "admin",
      audit: "console-session-list",
      querySchema: S.NoQuery,
      answer: ConsoleSessionList,
      errors: [...ADMIN_ERRORS],
      handler: async ({ admin: caller }) => json({ ok: true, sessions: await listConsoleSessions(deps.admin, deps.sessions, caller) }),
    }),
    endpoint({
      method: "POST",
      path: "/admin/console-sessions/{id}/end",
      summary: "End a console session at once: its next request is signed out",
      auth: { scope: "admin" },
      budget: "admin",
      audit: "console-session-end",
      querySchema: S.NoQuery,
      params: [SESSION_ID],
      answer: ConsoleSessionEnded,
      errors: [...ADMIN_ERRORS, "not_found"],
      handler: async ({ params, admin: caller }) => json({ ok: true, session: await endConsoleSession(deps.admin, deps.sessions, caller, params.id) }),
    }),
  ];
}

/** The console's page of them: `/console/sessions`, for a session holding admin. */
export function consoleSessionPages(deps: ConsoleDeps): Endpoint[] {
  const page = consolePage;
  return [
    page("GET", SESSIONS, "The console sessions open now, each with a button that ends it", "console-session-list", (p) =>
      sessionsPage(deps, p.session, p.address, new URLSearchParams(p.call.query)),
    ),
    page("POST", `${SESSIONS}/{id}/end`, "End a console session", "console-session-end", (p) => endSessionAction(deps, p.session, p.address, p.params.id)),
  ];
}
