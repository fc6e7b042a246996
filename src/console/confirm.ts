import type { Session } from "../domain/console-sessions";
import type { Outcome } from "./deps";
import { html, type Html } from "./html";
import { consolePage, csrfField, notice } from "./layout";

/**
 * Destructive actions confirm on a page of their own, without script (the CSP allows no inline
 * code and a page must work without JavaScript): the button GETs the action's address, which
 * answers this page naming what the action acts on; only its POST acts.
 */
export interface Confirmation {
  readonly title: string;
  /** What is about to happen, naming its object ("Revoke the licence of Ada Lovelace (Analytical Ltd)?"). */
  readonly question: Html | string;
  /** What follows from it, for the person to weigh. */
  readonly consequence: Html | string;
  /** Where the confirmed form POSTs: the address of this page. */
  readonly action: string;
  readonly button: string;
  /** Where Cancel leads. */
  readonly back: string;
  /** The section the page belongs to in the menu. */
  readonly current: string;
}

export function confirmPage(session: Session, c: Confirmation): Outcome {
  const body = html`<p id="confirm-question"><strong>${c.question}</strong></p><p>${c.consequence}</p>
<form class="row" method="post" action="${c.action}">${csrfField(session)}<button type="submit" class="danger">${c.button}</button> <a href="${c.back}">Cancel</a></form>`;
  return { page: consolePage({ title: c.title, session: session, current: c.current, body }) };
}

/** The button that opens a destructive action's confirmation page (a GET: nothing is done yet). */
export function confirmButton(action: string, label: string | Html): Html {
  return html`<form class="inline" method="get" action="${action}"><button type="submit" class="danger">${label}</button></form>`;
}

/** What a page says after an action, chosen by the `done` of its address: a fixed sentence, never text from the request. */
const DONE = {
  "license-saved": "Changes saved.",
  "license-revoked": "Licence revoked.",
  "license-reinstated": "Licence reinstated.",
  "token-ttl-saved": "Token lifetime saved.",
  "installation-deactivated": "Installation deactivated: its seat is free.",
  "release-halt": "Release halted.",
  "release-resume": "Release resumed.",
  "release-withdraw": "Release withdrawn.",
  "release-restore": "Release restored.",
  "delivery-retried": "Delivery queued again.",
  "admin-token-revoked": "Admin token revoked.",
  "webhook-removed": "Webhook endpoint removed.",
  "mail-resent": "Mail queued again: it is sent within a few seconds.",
} as const;

export type Done = keyof typeof DONE;

/** The address to send the browser to after an action, saying what was done. */
export const doneAt = (path: string, done: Done) => `${path}?done=${done}`;

/** The sentence for a page's `done`, or undefined. */
export function doneMessage(query: URLSearchParams): string | undefined {
  const done = query.get("done");
  return done !== null && Object.hasOwn(DONE, done) ? DONE[done as Done] : undefined;
}

export const doneNotice = (query: URLSearchParams) => {
  const message = doneMessage(query);
  return message ? notice(message) : "";
};
