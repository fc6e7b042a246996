/**
 * The site's mails: a subject, a plain-text body and a simple HTML body. Every value from the
 * records (a licensee's name, a plan's title) is escaped for HTML, and control characters other
 * than line breaks are taken out of text, so a name cannot add a header, a link or markup.
 */
export interface MailContent {
  readonly subject: string;
  readonly text: string;
  readonly html: string;
}

/** What a licence's mails say about it. */
export interface LicenceFacts {
  readonly licensee: string;
  readonly planTitle: string;
  readonly seats: number;
  /** Milliseconds, or null for a licence that does not expire. */
  readonly expires: number | null;
  /** The end of the updates window (milliseconds); null or absent: updates as long as the licence runs. */
  readonly updatesUntil?: number | null;
}

const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/g;

/** A value put in a mail's text: control characters (line breaks too, for one-line values) removed. */
export function plain(value: string, oneLine = true): string {
  const text = value.replace(CONTROL, "");
  return oneLine ? text.replace(/[\r\n]+/g, " ") : text;
}

export function escapeHtml(value: string): string {
  return plain(value).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

function page(site: string, paragraphs: readonly string[]): string {
  return `<!doctype html><html><body style="font-family:sans-serif;line-height:1.5;max-width:40em">${paragraphs.map((p) => `<p>${p}</p>`).join("")}<p style="color:#666">${escapeHtml(site)}</p></body></html>`;
}

const link = (url: string) => `<a href="${escapeHtml(url)}">${escapeHtml(url)}</a>`;
const keyBlock = (key: string) => `<code style="font-size:1.2em;letter-spacing:.05em">${escapeHtml(key)}</code>`;

/** The site's name in mails: its host. */
export const siteName = (baseUrl: string) => new URL(baseUrl).host;

export interface Links {
  /** The portal's address (sign in with the key, or by e-mail link). */
  readonly portal: string;
}

function licenceLine(l: LicenceFacts): string {
  const ends = l.expires === null ? "does not expire" : `runs until ${day(l.expires)}`;
  const updates = l.updatesUntil == null ? "" : `, with updates released until ${day(l.updatesUntil)}`;
  return `${plain(l.planTitle)}, ${l.seats} ${l.seats === 1 ? "seat" : "seats"}; it ${ends}${updates}`;
}

export function licenceCreated(site: string, l: LicenceFacts, key: string, links: Links): MailContent {
  const who = plain(l.licensee);
  return {
    subject: `Your licence key for ${site}`,
    text: [
      `Hello ${who},`,
      "",
      `Your licence is ready: ${licenceLine(l)}.`,
      "",
      "Your licence key:",
      "",
      `    ${key}`,
      "",
      "Enter it in the program to activate it. Keep this mail: the key is not shown again.",
      "",
      `Download the program, see your installations or free a seat at your portal (sign in with the key above): ${links.portal}`,
      "",
      site,
    ].join("\n"),
    html: page(site, [
      `Hello ${escapeHtml(who)},`,
      `Your licence is ready: ${escapeHtml(licenceLine(l))}.`,
      `Your licence key:<br>${keyBlock(key)}`,
      "Enter it in the program to activate it. Keep this mail: the key is not shown again.",
      `Download the program, see your installations or free a seat at your portal (sign in with the key above): ${link(links.portal)}`,
    ]),
  };
}

export function keyReissued(site: string, l: LicenceFacts, key: string, links: Links): MailContent {
  const who = plain(l.licensee);
  return {
    subject: `Your new licence key for ${site}`,
    text: [
      `Hello ${who},`,
      "",
      `Your licence (${licenceLine(l)}) has a new key; the old one no longer works. Installations already activated keep their seats.`,
      "",
      "Your new licence key:",
      "",
      `    ${key}`,
      "",
      `Your portal: ${links.portal}`,
      "",
      "If you did not ask for a new key, write to us: someone who could read your mail asked for it.",
      "",
      site,
    ].join("\n"),
    html: page(site, [
      `Hello ${escapeHtml(who)},`,
      `Your licence (${escapeHtml(licenceLine(l))}) has a new key; the old one no longer works. Installations already activated keep their seats.`,
      `Your new licence key:<br>${keyBlock(key)}`,
      `Your portal: ${link(links.portal)}`,
      "If you did not ask for a new key, write to us: someone who could read your mail asked for it.",
    ]),
  };
}

export function licenceExpiring(site: string, l: LicenceFacts & { readonly expires: number }, links: Links): MailContent {
  const who = plain(l.licensee);
  const when = day(l.expires);
  return {
    subject: `Your licence for ${site} ends on ${when}`,
    text: [
      `Hello ${who},`,
      "",
      `Your licence (${plain(l.planTitle)}) ends on ${when}. After that day the program can no longer be activated or refreshed with it.`,
      "",
      `Your portal: ${links.portal}`,
      "",
      site,
    ].join("\n"),
    html: page(site, [
      `Hello ${escapeHtml(who)},`,
      `Your licence (${escapeHtml(l.planTitle)}) ends on ${when}. After that day the program can no longer be activated or refreshed with it.`,
      `Your portal: ${link(links.portal)}`,
    ]),
  };
}

/**
 * A trial's end: it is the same licence's expiry, worded for someone who has not bought yet. No
 * portal link: the portal does not reach a trial through the address it was started with (portal-link.ts).
 */
export function trialEnding(site: string, l: LicenceFacts & { readonly expires: number }): MailContent {
  const when = day(l.expires);
  const says = `Your trial (${plain(l.planTitle)}) ends on ${when}. After that day the program can no longer be used with it; a licence key activated on the same computer takes over from the trial.`;
  return {
    subject: `Your trial of ${site} ends on ${when}`,
    text: ["Hello,", "", says, "", site].join("\n"),
    html: page(site, ["Hello,", escapeHtml(says)]),
  };
}

export function updatesEnding(site: string, l: LicenceFacts & { readonly updatesUntil: number }, links: Links): MailContent {
  const who = plain(l.licensee);
  const when = day(l.updatesUntil);
  const says = `The updates of your licence (${plain(l.planTitle)}) end on ${when}. The program keeps working; releases made after that day are not offered to it. Renew the licence to go on receiving them.`;
  return {
    subject: `Your updates for ${site} end on ${when}`,
    text: [`Hello ${who},`, "", says, "", `Your portal: ${links.portal}`, "", site].join("\n"),
    html: page(site, [`Hello ${escapeHtml(who)},`, escapeHtml(says), `Your portal: ${link(links.portal)}`]),
  };
}

export function portalLink(site: string, url: string, minutes: number): MailContent {
  return {
    subject: `Sign in to your licences at ${site}`,
    text: [
      "Hello,",
      "",
      `Someone (we hope you) asked to sign in to the licences of this address at ${site}. Open this link within ${minutes} minutes to sign in; it works once:`,
      "",
      url,
      "",
      "If you did not ask, ignore this mail: nothing happens without the link.",
      "",
      site,
    ].join("\n"),
    html: page(site, [
      "Hello,",
      `Someone (we hope you) asked to sign in to the licences of this address at ${escapeHtml(site)}. Open this link within ${minutes} minutes to sign in; it works once:`,
      link(url),
      "If you did not ask, ignore this mail: nothing happens without the link.",
    ]),
  };
}
