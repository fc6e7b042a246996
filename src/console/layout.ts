import type { Scope } from "../domain/admin/deps";
import { sessionHas, type Session } from "../domain/console-sessions";
import { html, type Html } from "./html";

/** The console's sections, each shown only to a session with its scope. */
const SECTIONS: readonly { path: string; label: string; scope: Scope }[] = [
  { path: "/console/", label: "Dashboard", scope: "stats:read" },
  { path: "/console/licenses", label: "Licences", scope: "licenses:read" },
  { path: "/console/sales", label: "Sales", scope: "licenses:read" },
  { path: "/console/audit", label: "Audit trail", scope: "audit:read" },
  { path: "/console/releases", label: "Releases", scope: "releases:read" },
  { path: "/console/webhooks", label: "Webhooks", scope: "webhooks:read" },
  { path: "/console/mail", label: "Mail", scope: "licenses:read" },
  { path: "/console/offline", label: "Offline activation", scope: "activations:write" },
  { path: "/console/tokens", label: "Admin tokens", scope: "admin" },
  { path: "/console/sessions", label: "Sessions", scope: "admin" },
];

const head = (title: string, charts: boolean) => html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · keyturn</title><link rel="icon" href="data:,">
<link rel="stylesheet" href="/console/assets/console.css">${charts ? html`<link rel="stylesheet" href="/console/assets/uplot.css">` : ""}
${charts ? html`<script src="/console/assets/uplot.js" defer></script>` : ""}<script src="/console/assets/console.js" defer></script>
</head>`;

/** The hidden field every console and portal form carries (checked with the Origin on each POST). */
export const csrfField = (session: Session) => html`<input type="hidden" name="csrf" value="${session.csrf}">`;

/** A form that POSTs one action: a button, with the session's CSRF token. */
export function actionForm(session: Session, action: string, label: string | Html, danger = false, extra?: Html): Html {
  return html`<form class="inline" method="post" action="${action}">${csrfField(session)}${extra}<button type="submit"${danger ? html` class="danger"` : ""}>${label}</button></form>`;
}

export function consolePage(o: { title: string; session: Session; current: string; body: Html; charts?: boolean }): Html {
  const session = o.session;
  const nav = SECTIONS.filter((x) => sessionHas(session, x.scope)).map(
    (x) => html`<li><a href="${x.path}"${x.path === o.current ? html` aria-current="page"` : ""}>${x.label}</a></li>`,
  );
  return html`${head(o.title, o.charts ?? false)}<body>
<header><span class="brand">keyturn console</span><nav aria-label="Sections"><ul>${nav}</ul></nav>
<span class="muted">${session.name}</span>${actionForm(session, "/console/sign-out", "Sign out")}</header>
<main id="main"><h1>${o.title}</h1>${o.body}</main></body></html>`;
}

export function portalPage(o: { title: string; session: Session | null; body: Html }): Html {
  const session = o.session;
  return html`${head(o.title, false)}<body>
<header><span class="brand">Licence portal</span>${session ? actionForm(session, "/portal/sign-out", "Sign out") : ""}</header>
<main id="main"><h1>${o.title}</h1>${o.body}</main></body></html>`;
}

/** A page of its own for the signed-out console: the sign-in forms, or an error. */
export function plainPage(title: string, body: Html): Html {
  return html`${head(title, false)}<body><header><span class="brand">keyturn console</span></header><main id="main"><h1>${title}</h1>${body}</main></body></html>`;
}

/** A button's label with words only screen readers read (the row it acts on), keeping narrow tables narrow. */
export const labelFor = (visible: string, context: string) => html`${visible}<span class="vh"> ${context}</span>`;

export const notice = (text: string | Html, error = false) => html`<p class="notice${error ? " error" : ""}" role="${error ? "alert" : "status"}">${text}</p>`;

/** ISO date and time to the minute, or a dash. */
export const when = (iso: string | null | undefined) => (iso ? iso.replace("T", " ").slice(0, 16) : "—");
