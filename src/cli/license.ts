import { isoTime } from "../domain/clock";
import { parseList } from "../config/parse";
import type { LicenseRecord } from "../store/types";
import { openAdmin } from "./admin-context";
import { out, parseIsoFlag, printJson, UsageError } from "./io";

const USAGE = [
  "keyturn license create --licensee N --organization O --plan P --plan-title T --seats N --channels stable,preview [--expires ISO] [--json]",
  "       keyturn license list [--json]",
  "       keyturn license show KEY|ID [--json]",
  "       keyturn license revoke KEY|ID [--json]",
].join("\n");

const FLAGS = {
  licensee: { type: "string" },
  organization: { type: "string" },
  plan: { type: "string" },
  "plan-title": { type: "string" },
  seats: { type: "string" },
  channels: { type: "string" },
  expires: { type: "string" },
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
  };
}

function printLicense(v: ReturnType<typeof licenseView>): void {
  const seats = typeof v.seats === "number" ? `${v.seats}` : `${v.seats.used}/${v.seats.total} in use`;
  out(`${v.id}  ${v.licensee} (${v.organization})`);
  out(`  plan ${v.plan} "${v.planTitle}", channels ${v.channels.join(",")}, seats ${seats}`);
  out(`  issued ${v.issued}, expires ${v.expires ?? "never"}${v.revoked ? `, REVOKED ${v.revoked}` : ""}`);
}

/** `keyturn license create|list|show|revoke`. */
export async function licenseCommand(args: string[], env: Record<string, string | undefined>): Promise<number> {
  const [sub, ...rest] = args;
  if (!sub || !["create", "list", "show", "revoke"].includes(sub))
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
      const { key, license } = await ctx.admin.createLicense({
        licensee: f.licensee as string,
        organization: f.organization as string,
        plan: f.plan as string,
        planTitle: f["plan-title"] as string,
        seats,
        channels: parseList(f.channels as string),
        expires: parseIsoFlag(USAGE, "expires", f.expires as string | undefined),
      });
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
    const license = sub === "show" ? await ctx.admin.findLicense(target) : await ctx.admin.revokeLicense(target);
    const view = licenseView(license, await ctx.store.countActiveSeats(license.id));
    if (json) printJson(view);
    else printLicense(view);
    return 0;
  } finally {
    await ctx.store.close();
  }
}
