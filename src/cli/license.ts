import { isoTime } from "../domain/clock";
import { parseList } from "../config/parse";
import { CLI_CALLER } from "../domain/admin/deps";
import { createLicense, reinstateLicense, updateLicense } from "../domain/admin/licenses";
import { KeyturnError } from "../domain/errors";
import { formatSeatLease, parseSeatLease } from "../domain/seat-lease";
import type { LicenseRecord } from "../store/types";
import { openAdmin } from "./admin-context";
import { out, parseIsoFlag, printJson, UsageError } from "./io";

const USAGE = [
  "keyturn license create --licensee N --organization O --plan P --plan-title T --seats N --channels stable,preview [--expires ISO] [--email E] [--seat-lease 30d] [--json]",
  "       keyturn license list [--json]",
  "       keyturn license show KEY|ID [--json]",
  "       keyturn license update KEY|ID [--seats N] [--expires ISO|never] [--channels C,...] [--plan P] [--plan-title T] [--licensee N] [--organization O] [--email E|none] [--seat-lease 30d|none] [--json]",
  "       keyturn license revoke KEY|ID [--json]",
  "       keyturn license reinstate KEY|ID [--json]",
].join("\n");

const FLAGS = {
  licensee: { type: "string" },
  organization: { type: "string" },
  plan: { type: "string" },
  "plan-title": { type: "string" },
  seats: { type: "string" },
  channels: { type: "string" },
  expires: { type: "string" },
  email: { type: "string" },
  "seat-lease": { type: "string" },
  json: { type: "boolean" },
} as const;

export function licenseView(l: LicenseRecord, seatsUsed?: number) {
  return {
    id: l.id,
    kind: l.kind,
    licensee: l.licensee,
    organization: l.organization,
    plan: l.plan,
    planTitle: l.planTitle,
    channels: l.channels,
    seats: seatsUsed === undefined ? l.seats : { used: seatsUsed, total: l.seats },
    issued: isoTime(l.issued),
    expires: l.expires === null ? null : isoTime(l.expires),
    revoked: l.revoked === null ? null : isoTime(l.revoked),
    email: l.email ?? null,
    seatLease: l.seatLease == null ? null : formatSeatLease(l.seatLease),
  };
}

/** `--seat-lease`: checked here so a bad value is a usage error (exit 2) naming the flag; sent on as given. */
function seatLeaseFlag(f: Readonly<Record<string, string | boolean | undefined>>): { seatLease?: string | null } {
  const text = f["seat-lease"];
  if (typeof text !== "string") return {};
  try {
    parseSeatLease(text);
  } catch (e) {
    if (e instanceof KeyturnError) throw new UsageError(USAGE, `--seat-lease: ${e.message}`);
    throw e;
  }
  return { seatLease: text === "none" ? null : text };
}

function printLicense(v: ReturnType<typeof licenseView>): void {
  const seats = typeof v.seats === "number" ? `${v.seats}` : `${v.seats.used}/${v.seats.total} in use`;
  out(`${v.id}  ${v.licensee} (${v.organization})`);
  out(`  plan ${v.plan} "${v.planTitle}", channels ${v.channels.join(",")}, seats ${seats}`);
  out(`  issued ${v.issued}, expires ${v.expires ?? "never"}${v.revoked ? `, REVOKED ${v.revoked}` : ""}${v.email ? `, email ${v.email}` : ""}`);
  if (v.seatLease) out(`  seat lease ${v.seatLease}: a seat whose installation is not seen for that long goes to the next activation`);
}

/** The fields `license update` was given, as the update service takes them. */
function updateBody(f: Readonly<Record<string, string | boolean | undefined>>): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const str = (flag: string) => (typeof f[flag] === "string" ? (f[flag] as string) : undefined);
  if (str("seats") !== undefined) {
    if (!/^\d{1,10}$/.test(str("seats")!)) throw new UsageError(USAGE, "--seats must be a whole number of at least 1");
    body.seats = Number(str("seats"));
  }
  if (str("expires") !== undefined) body.expires = str("expires") === "never" ? null : str("expires");
  if (str("channels") !== undefined) body.channels = parseList(str("channels")!);
  for (const [flag, field] of [["plan", "plan"], ["plan-title", "planTitle"], ["licensee", "licensee"], ["organization", "organization"]] as const)
    if (str(flag) !== undefined) body[field] = str(flag);
  if (str("email") !== undefined) body.email = str("email") === "none" ? null : str("email");
  Object.assign(body, seatLeaseFlag(f));
  if (Object.keys(body).length === 0) throw new UsageError(USAGE, "license update needs at least one field to change");
  return body;
}

/** `keyturn license create|list|show|update|revoke|reinstate`. */
export async function licenseCommand(args: string[], env: Record<string, string | undefined>): Promise<number> {
  const [sub, ...rest] = args;
  if (!sub || !["create", "list", "show", "update", "revoke", "reinstate"].includes(sub))
    throw new UsageError(USAGE, sub ? `unknown license command "${sub}"` : "missing license command");
  const ctx = await openAdmin(USAGE, rest, env, FLAGS);
  const f = ctx.flags;
  const json = f.json === true;
  try {
    if (sub === "create") {
      for (const name of ["licensee", "organization", "plan", "plan-title", "seats", "channels"])
        if (typeof f[name] !== "string" || !(f[name] as string).trim()) throw new UsageError(USAGE, `--${name} is required`);
      const seats = Number(f.seats);
      if (!/^\d+$/.test(f.seats as string) || seats < 1) throw new UsageError(USAGE, "--seats must be a whole number of at least 1");
      const expires = parseIsoFlag(USAGE, "expires", f.expires as string | undefined);
      const created = await createLicense(ctx.deps, CLI_CALLER, {
        licensee: f.licensee as string,
        organization: f.organization as string,
        plan: f.plan as string,
        planTitle: f["plan-title"] as string,
        seats,
        channels: parseList(f.channels as string),
        ...(expires === null ? {} : { expires: new Date(expires).toISOString() }),
        ...(typeof f.email === "string" ? { email: f.email } : {}),
        ...seatLeaseFlag(f),
      });
      const key = created.key;
      const license = (await ctx.store.getLicense(created.license.id))!;
      if (json) printJson({ key, ...licenseView(license) });
      else {
        out(`key:  ${key}`);
        out("      (shown this once: keyturn keeps only its hash)");
        printLicense(licenseView(license));
      }
      return 0;
    }
    if (sub === "list") {
      const rows = await ctx.admin.listLicenses();
      const views = rows.map((r) => licenseView(r.license, r.seatsUsed));
      if (json) printJson({ licenses: views });
      else if (views.length === 0) out("no licenses");
      else views.forEach(printLicense);
      return 0;
    }
    const target = ctx.positionals[0];
    if (!target || ctx.positionals.length > 1) throw new UsageError(USAGE, `license ${sub} needs one KEY or ID`);
    let license: LicenseRecord;
    if (sub === "show") license = await ctx.admin.findLicense(target);
    else if (sub === "revoke") license = await ctx.admin.revokeLicense(target);
    else {
      const { id } = sub === "update" ? (await updateLicense(ctx.deps, CLI_CALLER, target, updateBody(f))).license : await reinstateLicense(ctx.deps, CLI_CALLER, target);
      license = (await ctx.store.getLicense(id))!;
    }
    const view = licenseView(license, await ctx.store.countActiveSeats(license.id));
    if (json) printJson(view);
    else printLicense(view);
    return 0;
  } finally {
    await ctx.store.close();
  }
}
