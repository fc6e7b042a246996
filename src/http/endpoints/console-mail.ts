import type { ConsoleDeps } from "../../console/deps";
import { MAIL_PATH, mailPage, resendMailAction } from "../../console/pages/mail";
import type { Endpoint } from "../endpoint";
import { consolePage } from "./console";

/** The console's view of the mail outbox: what was sent to whom, and a mail sent again by support (audited). */
export function consoleMailEndpoints(deps: ConsoleDeps): Endpoint[] {
  return [
    consolePage("GET", MAIL_PATH, "Mail: what was sent, to whom, and what is still being tried", "mail-list", (p) =>
      mailPage(deps, p.session, p.address, new URLSearchParams(p.call.query)),
    ),
    consolePage("POST", `${MAIL_PATH}/{id}/resend`, "Send a mail again (a new mail with its own attempts)", "mail-resend", (p) =>
      resendMailAction(deps, p.session, p.address, p.params.id),
    ),
  ];
}
