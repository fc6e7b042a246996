import { portalSignInPage } from "../console/pages/portal";
import { consoleSignInPage, SIGN_IN } from "../console/pages/sign-in";
import type { SiteOrigin } from "../config/site-origin";
import type { ConsoleSessions, Session } from "../domain/console-sessions";
import { sessionCookie, webAnswer, type SessionKind } from "./web";

/** The portal's home: its sign-in form when signed out. */
export const PORTAL_HOME = "/portal/";

/**
 * The session check of the console's and portal's pages (the `consoleSession` and `portalSession`
 * macros of auth.ts): the session the browser's cookie names, and what a browser without one is
 * answered (a GET goes to the sign-in, a POST is shown it again with why).
 */
export function sessionGate(sessions: ConsoleSessions, openId: boolean, site: SiteOrigin) {
  return {
    site,
    async find(request: Request, kind: SessionKind): Promise<Session | null> {
      return sessions.find(await sessionCookie(request, site, kind), kind);
    },
    signedOut(kind: SessionKind, method: string): Response {
      if (kind === "console")
        return method === "GET"
          ? webAnswer({ redirect: SIGN_IN })
          : webAnswer(consoleSignInPage({ openId, message: "Your session has ended: sign in again.", status: 401 }));
      return method === "GET" ? webAnswer({ redirect: PORTAL_HOME }) : webAnswer(portalSignInPage("Your sign-in has ended: sign in again."));
    },
  };
}

export type SessionGate = ReturnType<typeof sessionGate>;
