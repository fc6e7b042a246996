import {
  createLicense,
  deactivateActivation,
  LicenseCreateInput,
  LicenseQuery,
  LicenseUpdateInput,
  reinstateLicense,
  revokeLicense,
  searchLicenses,
  showLicense,
  updateLicense,
} from "../../domain/admin/licenses";
import { decode } from "../../domain/decode";
import { requireScope } from "../../domain/admin/deps";
import { KeyturnError } from "../../domain/errors";
import { normalizeLicenseKey } from "../../domain/license-key";
import { sessionHas, type Session } from "../../domain/console-sessions";
import type { ActivationView, LicenseView } from "../../domain/events";
import { callerOf, type ConsoleDeps, type Outcome } from "../deps";
import { dateField, field, numberField, type Form } from "../form";
import { html, type Html } from "../html";
import { confirmButton, confirmPage, doneAt } from "../confirm";
import { actionForm, labelFor, consolePage, csrfField, notice, when } from "../layout";

export const licensePath = (id: string) => `/console/licenses/${encodeURIComponent(id)}`;
const deactivatePath = (id: string) => `/console/activations/${encodeURIComponent(id)}/deactivate`;

const DAY_SECONDS = 86_400;

/** Who holds a licence, as a confirmation names it: the licensee, and their organisation when there is one. */
export const holderOf = (l: Pick<LicenseView, "licensee" | "organization">) => (l.organization ? `${l.licensee} (${l.organization})` : l.licensee);

/** A token lifetime in seconds as a person reads it. */
const lifetimeText = (seconds: number) => (seconds % DAY_SECONDS === 0 ? `${seconds / DAY_SECONDS} day(s)` : `${seconds} seconds`);

const statusOf = (l: LicenseView, now: number) => (l.revoked ? "revoked" : l.expires !== null && Date.parse(l.expires) <= now ? "expired" : "active");

function channelBoxes(channels: readonly string[], checked: readonly string[]): Html {
  return html`<fieldset><legend>Channels</legend>${channels.map(
    (c) => html`<label><input type="checkbox" name="channels" value="${c}"${checked.includes(c) ? html` checked` : ""}> ${c}</label>`,
  )}</fieldset>`;
}

/**
 * The create form. On a site with plans (the configuration's [plans.NAME]) the plan fills in every
 * field left empty, so nothing else is required or filled in beforehand; without plans it is as it
 * always was.
 */
function createForm(deps: ConsoleDeps, session: Session): Html {
  const plans = [...(deps.admin.plans?.values() ?? [])];
  const planned = plans.length > 0;
  return html`<h2>Create a licence</h2><form class="stack" method="post" action="/console/licenses">${csrfField(session)}
<label>Licensee <input name="licensee" required maxlength="200" autocomplete="off"></label>
<label>Organisation <input name="organization" required maxlength="200" autocomplete="off"></label>
<label>Email <input name="email" type="email" maxlength="254" autocomplete="off"></label>
${
  planned
    ? html`<label>Plan (its values fill in every field left empty) <input name="plan" required maxlength="64" list="plans" value="${plans[0]!.name}"></label>
<datalist id="plans">${plans.map((p) => html`<option value="${p.name}">${p.title ?? p.name}</option>`)}</datalist>
<label>Plan title (empty: the plan's) <input name="planTitle" maxlength="200"></label>
<label>Seats (empty: the plan's) <input name="seats" type="number" min="1"></label>`
    : html`<label>Plan <input name="plan" required maxlength="64" value="standard"></label>
<label>Plan title <input name="planTitle" required maxlength="200" value="Standard"></label>
<label>Seats <input name="seats" type="number" min="1" required value="1"></label>`
}
<label>Expires (empty: ${planned ? "the plan's, else never" : "never"}) <input name="expires" type="date"></label>
<label>Updates until (empty: ${planned ? "the plan's, else every release" : "every release"}; a perpetual licence's maintenance window) <input name="updatesUntil" type="date"></label>
<label>Features (comma-separated, e.g. export-pdf, max-projects=50; empty: ${planned ? "the plan's" : "none"}) <input name="features" maxlength="2700" autocomplete="off"></label>
<label>Seat lease (empty: ${planned ? "the plan's, else none" : "none"}; e.g. 30d: a seat not seen that long is freed) <input name="seatLease" maxlength="16" autocomplete="off"></label>
${channelBoxes(deps.variant.channels, planned ? [] : [deps.variant.channels[0]!])}${planned ? html`<p class="muted">No channel ticked: the plan's.</p>` : ""}<button type="submit">Create licence</button></form>`;
}

/** A features field: comma-separated `name` or `name=value`; empty is none. */
const featuresField = (f: Form): string[] =>
  (field(f, "features") ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);

/** Licences (scope licenses:read): search by key, licensee, organisation or email; the create form with licenses:write. */
export async function licensesPage(deps: ConsoleDeps, session: Session, address: string | null, query: URLSearchParams): Promise<Outcome> {
  const q = query.get("query")?.trim() ?? "";
  const caller = callerOf(session, address);
  // A licence key typed whole finds its licence (the store keeps only the key's hash).
  const byKey = q && normalizeLicenseKey(deps.variant, q) ? await showLicense(deps.admin, caller, q).catch(() => null) : null;
  const page = byKey
    ? { licenses: [byKey.license], next: null }
    : await searchLicenses(
        deps.admin,
        caller,
        decode(LicenseQuery, { ...(q ? { query: q } : {}), ...(query.get("cursor") ? { cursor: query.get("cursor") } : {}) }),
      );
  const now = deps.clock();
  const body = html`<form class="row" method="get" action="/console/licenses" role="search">
<label>Search (key, licensee, organisation, email) <input name="query" type="search" value="${q}" maxlength="200"></label><button type="submit">Search</button></form>
<div class="table-wrap"><table id="licenses"><thead><tr><th scope="col">Licensee</th><th scope="col">Organisation</th><th scope="col">Seats</th><th scope="col">Channels</th><th scope="col">Expires</th><th scope="col">Status</th></tr></thead>
<tbody>${page.licenses.map(
    (l) =>
      html`<tr><td><a href="${licensePath(l.id)}">${l.licensee}</a></td><td>${l.organization}</td><td>${l.seatsUsed ?? 0} / ${l.seats}</td><td>${l.channels.join(", ")}</td><td>${when(l.expires)}</td><td>${statusOf(l, now)}</td></tr>`,
  )}</tbody></table></div>
${page.licenses.length === 0 ? html`<p>No licence matches.</p>` : ""}
${page.next ? html`<p><a href="/console/licenses?${new URLSearchParams({ ...(q ? { query: q } : {}), cursor: page.next }).toString()}">Next page</a></p>` : ""}
${sessionHas(session, "licenses:write") ? createForm(deps, session) : ""}`;
  return { page: consolePage({ title: "Licences", session, current: "/console/licenses", body }) };
}

/** Creates a licence and shows its key once, with a copy button (the key is not kept anywhere readable). */
export async function createLicenseAction(deps: ConsoleDeps, session: Session, address: string | null, f: Form): Promise<Outcome> {
  const expires = dateField(f, "expires");
  const email = field(f, "email");
  const updatesUntil = dateField(f, "updatesUntil");
  const features = featuresField(f);
  // On a site with plans an empty field is the plan's (left out); without, as it always was.
  const planned = (deps.admin.plans?.size ?? 0) > 0;
  const seats = numberField(f, "seats");
  const channels = f.getAll("channels");
  const input = decode(LicenseCreateInput, {
    licensee: f.get("licensee") ?? "",
    organization: f.get("organization") ?? "",
    plan: f.get("plan") ?? "",
    ...(planned && !field(f, "planTitle") ? {} : { planTitle: f.get("planTitle") ?? "" }),
    ...(planned && seats === undefined ? {} : { seats: seats ?? 0 }),
    ...(planned && channels.length === 0 ? {} : { channels }),
    ...(expires ? { expires } : {}),
    ...(email ? { email } : {}),
    ...(field(f, "seatLease") ? { seatLease: field(f, "seatLease") } : {}),
    ...(updatesUntil ? { updatesUntil } : {}),
    ...(features.length > 0 ? { features } : {}),
  });
  const created = await createLicense(deps.admin, callerOf(session, address), input);
  const body = html`${notice("The licence was created. Its key is shown this once: copy it now and give it to the customer.")}
<p><span class="key" id="license-key">${created.key}</span> <button type="button" class="plain" data-copy="license-key" hidden>Copy key</button></p>
<p><a href="${licensePath(created.license.id)}">Open the licence of ${created.license.licensee}</a></p>`;
  return { page: consolePage({ title: "Licence created", session, current: "/console/licenses", body }), status: 201 };
}

function installationRows(session: Session, activations: readonly ActivationView[]): Html {
  const canDeactivate = sessionHas(session, "activations:write");
  return html`<div class="table-wrap"><table id="installations" class="cards"><thead><tr><th scope="col">Name</th><th scope="col">Platform</th><th scope="col">Version</th><th scope="col">Last seen</th><th scope="col">State</th>${canDeactivate ? html`<th scope="col"><span class="muted">Action</span></th>` : ""}</tr></thead>
<tbody>${activations.map(
    (a) =>
      html`<tr data-activation="${a.id}"><td data-label="Name">${a.name}</td><td data-label="Platform">${a.platform}</td><td data-label="Version">${a.version}</td><td data-label="Last seen">${when(a.lastSeen)}</td><td data-label="State">${a.deactivated ? `deactivated ${when(a.deactivated)}` : "active"}</td>${
        canDeactivate ? html`<td data-label="">${a.deactivated ? "" : confirmButton(deactivatePath(a.id), labelFor("Deactivate", a.name))}</td>` : ""
      }</tr>`,
  )}</tbody></table></div>${activations.length === 0 ? html`<p>No installation yet.</p>` : ""}`;
}

function editForm(deps: ConsoleDeps, session: Session, l: LicenseView): Html {
  return html`<h2>Edit</h2><form class="stack" method="post" action="${licensePath(l.id)}">${csrfField(session)}
<label>Seats <input name="seats" type="number" min="1" required value="${l.seats}"></label>
<label>Expires (empty: never) <input name="expires" type="date" value="${l.expires ? l.expires.slice(0, 10) : ""}"></label>
<label>Seat lease (empty: none) <input name="seatLease" maxlength="16" value="${l.seatLease ?? ""}" autocomplete="off"></label>
<label>Updates until (empty: every release) <input name="updatesUntil" type="date" value="${l.updatesUntil ? l.updatesUntil.slice(0, 10) : ""}"></label>
<label>Features (comma-separated; empty: none) <input name="features" maxlength="2700" value="${l.features.join(", ")}" autocomplete="off"></label>
${channelBoxes(deps.variant.channels, l.channels)}<button type="submit">Save changes</button></form>`;
}

/** A licence's own token lifetime, which every token of it lasts, offline answers included (the site's when empty). */
function tokenLifetimeForm(session: Session, l: LicenseView): Html {
  const days = l.tokenTtl !== null && l.tokenTtl % DAY_SECONDS === 0 ? l.tokenTtl / DAY_SECONDS : "";
  return html`<h2>Token lifetime</h2><form class="row" method="post" action="${licensePath(l.id)}/token-ttl">${csrfField(session)}
<label>Days a token lasts, online or offline (1 to 366; empty: the site's) <input name="days" type="number" min="1" max="366" value="${days}"></label><button type="submit">Save token lifetime</button></form>`;
}

/** Support's tools on a licence: a new key for a lost one (licenses:write), an offline answer (activations:write). */
function supportTools(session: Session, l: LicenseView): Html {
  const rekey = sessionHas(session, "licenses:write") && l.revoked === null;
  const offline = sessionHas(session, "activations:write");
  if (!rekey && !offline) return html``;
  return html`<h2>Support</h2><p>${rekey ? confirmButton(`${licensePath(l.id)}/rekey`, "Reissue key") : ""}${
    offline ? html`<a href="/console/offline?license=${encodeURIComponent(l.id)}">Answer an offline request for this licence</a>` : ""
  }</p>`;
}

/** A licence with its installations (scope licenses:read); edit, revoke, reinstate with licenses:write; deactivate with activations:write. */
export async function licensePage(deps: ConsoleDeps, session: Session, address: string | null, id: string, message?: string): Promise<Outcome> {
  const { license: l, activations } = await showLicense(deps.admin, callerOf(session, address), id);
  const write = sessionHas(session, "licenses:write");
  const body = html`${message ? notice(message) : ""}<dl class="grid">
<div><dt>Licensee</dt><dd id="licensee">${l.licensee}</dd></div><div><dt>Organisation</dt><dd id="organization">${l.organization}</dd></div>
<div><dt>Email</dt><dd>${l.email ?? "—"}</dd></div><div><dt>Plan</dt><dd>${l.planTitle} (${l.plan})</dd></div>
<div><dt>Seats used</dt><dd id="seats">${l.seatsUsed ?? 0} / ${l.seats}</dd></div><div><dt>Channels</dt><dd>${l.channels.join(", ")}</dd></div>
<div><dt>Seat lease</dt><dd id="seat-lease">${l.seatLease ?? "none"}</dd></div><div><dt>Token lifetime</dt><dd id="token-ttl">${l.tokenTtl === null ? "the site's" : `${lifetimeText(l.tokenTtl)} (this licence's own)`}</dd></div><div><dt>Issued</dt><dd>${when(l.issued)}</dd></div><div><dt>Expires</dt><dd>${when(l.expires)}</dd></div>
<div><dt>Updates until</dt><dd id="updates-until">${l.updatesUntil === null ? "every release" : when(l.updatesUntil)}</dd></div><div><dt>Features</dt><dd id="features">${l.features.length ? l.features.join(", ") : "none"}</dd></div>
<div><dt>Status</dt><dd id="status">${statusOf(l, deps.clock())}</dd></div><div><dt>Id</dt><dd><code>${l.id}</code></dd></div></dl>
${write ? (l.revoked ? actionForm(session, `${licensePath(l.id)}/reinstate`, "Reinstate licence") : confirmButton(`${licensePath(l.id)}/revoke`, "Revoke licence")) : ""}
<h2>Installations</h2>${installationRows(session, activations)}
${supportTools(session, l)}
${write ? editForm(deps, session, l) : ""}${write ? tokenLifetimeForm(session, l) : ""}
<p><a href="/console/audit?license=${encodeURIComponent(l.id)}">Audit trail of this licence</a></p>`;
  return { page: consolePage({ title: `Licence of ${l.licensee}`, session, current: "/console/licenses", body }) };
}

export async function updateLicenseAction(deps: ConsoleDeps, session: Session, address: string | null, id: string, f: Form): Promise<Outcome> {
  // The form shows times as days: a day left as shown keeps the time it stands for (a plan's
  // window ends at the time of day it was sold), rather than moving it to that day's start.
  const current = await deps.admin.store.getLicense(id);
  const day = (ms: number | null | undefined) => (ms == null ? undefined : new Date(ms).toISOString().slice(0, 10));
  const unlessSameDay = (name: "expires" | "updatesUntil") =>
    field(f, name) !== undefined && field(f, name) === day(current?.[name]) ? {} : { [name]: dateField(f, name) ?? null };
  const input = decode(LicenseUpdateInput, {
    seats: numberField(f, "seats"),
    channels: f.getAll("channels"),
    ...unlessSameDay("expires"),
    seatLease: field(f, "seatLease") ?? null,
    ...unlessSameDay("updatesUntil"),
    features: featuresField(f),
  });
  await updateLicense(deps.admin, callerOf(session, address), id, input);
  return { redirect: doneAt(licensePath(id), "license-saved") };
}

/** Sets or clears a licence's own token lifetime (the admin API's PATCH tokenTtl: licenses:write, audit license-update). */
export async function tokenLifetimeAction(deps: ConsoleDeps, session: Session, address: string | null, id: string, f: Form): Promise<Outcome> {
  const days = numberField(f, "days");
  const input = decode(LicenseUpdateInput, { tokenTtl: days === undefined ? null : days * DAY_SECONDS });
  await updateLicense(deps.admin, callerOf(session, address), id, input);
  return { redirect: doneAt(licensePath(id), "token-ttl-saved") };
}

/** The confirmation of a revoke, naming the licence and its holder. */
export async function revokeConfirmPage(deps: ConsoleDeps, session: Session, address: string | null, id: string): Promise<Outcome> {
  const caller = callerOf(session, address);
  requireScope(caller.principal, "licenses:write");
  const { license: l } = await showLicense(deps.admin, caller, id);
  return confirmPage(session, {
    title: "Revoke licence?",
    question: `Revoke the licence of ${holderOf(l)}, ${l.id}?`,
    consequence: `Its ${l.seatsUsed ?? 0} installation(s) stop being served at their next check, and nothing can be activated with its key. It can be reinstated later.`,
    action: `${licensePath(l.id)}/revoke`,
    button: "Revoke licence",
    back: licensePath(l.id),
    current: "/console/licenses",
  });
}

/** The confirmation of a deactivation, naming the installation and its licence. */
export async function deactivateConfirmPage(deps: ConsoleDeps, session: Session, address: string | null, activationId: string): Promise<Outcome> {
  const caller = callerOf(session, address);
  requireScope(caller.principal, "activations:write");
  const activation = await deps.admin.store.getActivation(activationId);
  if (!activation) throw new KeyturnError("not_found", `no activation ${activationId}`);
  const { license: l, activations } = await showLicense(deps.admin, caller, activation.licenseId);
  const a = activations.find((x) => x.id === activationId)!;
  return confirmPage(session, {
    title: "Deactivate installation?",
    question: `Deactivate "${a.name}" (${a.platform}, version ${a.version}) of the licence of ${l.licensee}?`,
    consequence: "Its seat is freed at once and its tokens stop working at their next check: the program must be activated again.",
    action: deactivatePath(activationId),
    button: "Deactivate installation",
    back: licensePath(l.id),
    current: "/console/licenses",
  });
}

export async function revokeLicenseAction(deps: ConsoleDeps, session: Session, address: string | null, id: string): Promise<Outcome> {
  await revokeLicense(deps.admin, callerOf(session, address), id);
  return { redirect: doneAt(licensePath(id), "license-revoked") };
}

export async function reinstateLicenseAction(deps: ConsoleDeps, session: Session, address: string | null, id: string): Promise<Outcome> {
  await reinstateLicense(deps.admin, callerOf(session, address), id);
  return { redirect: doneAt(licensePath(id), "license-reinstated") };
}

export async function deactivateAction(deps: ConsoleDeps, session: Session, address: string | null, activationId: string): Promise<Outcome> {
  const a = await deactivateActivation(deps.admin, callerOf(session, address), activationId);
  return { redirect: doneAt(licensePath(a.license), "installation-deactivated") };
}
