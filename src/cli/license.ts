import { isoTime } from "../domain/clock";
import { ConfigError, parseDuration, parseList } from "../config/parse";
import { MAX_TOKEN_TTL } from "../config/settings";
import { CLI_CALLER } from "../domain/admin/deps";
import { TOKEN_TTL_MIN } from "../domain/admin/model";
import { decode } from "../domain/decode";
import { createLicense, LicenseCreateInput, LicenseUpdateInput, rekeyLicense, reinstateLicense, updateLicense } from "../domain/admin/licenses";
import { KeyturnError } from "../domain/errors";
import { formatSeatLease, parseSeatLease } from "../domain/seat-lease";
import type { LicenseRecord } from "../store/types";
import { findPlan } from "../domain/plans";
import { listPlans } from "../domain/admin/plans";
import { renewLicense } from "../domain/admin/renewal";

/** Seconds as the configuration writes them: `365d`, `12h`, or seconds. */
const durationText = (s: number) => (s % 86_400 === 0 ? `${s / 86_400}d` : s % 3600 === 0 ? `${s / 3600}h` : `${s}s`);
import { openAdmin } from "./admin-context";
import { out, parseIsoFlag, printJson, UsageError } from "./io";

export const USAGE = [
  "keyturn license create --licensee N --plan P [--seats N] [--channels stable,preview] [--organization O] [--plan-title T] [--expires ISO|never] [--email E] [--token-ttl 366d] [--seat-lease 30d] [--updates-until ISO|none] [--features F,F=V|none] [--json]",
  "       (a plan of the configuration's [plans.NAME] fills in what is not given; otherwise --seats and --channels are required)",
  "       keyturn license list [--json]",
  "       keyturn license show KEY|ID [--json]",
  "       keyturn license update KEY|ID [--seats N] [--expires ISO|never] [--channels C,...] [--plan P] [--plan-title T] [--licensee N] [--organization O] [--email E|none] [--token-ttl 90d|default] [--seat-lease 30d|none] [--updates-until ISO|none] [--features F,F=V|none] [--json]",
  "       keyturn license revoke KEY|ID [--json]",
  "       keyturn license reinstate KEY|ID [--json]",
  "       keyturn license rekey KEY|ID [--json]          # a new key, shown once; the old key stops working",
  "       keyturn license renew KEY|ID [--plan P] [--json]  # extend updates (and an expiry) by the plan's updatesFor (expiresAfter)",
  "       keyturn license plans [--json]                   # the configuration's [plans.NAME]",
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
  "updates-until": { type: "string" },
  features: { type: "string" },
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
    tokenTtl: l.tokenTtl ?? null,
    seatLease: l.seatLease == null ? null : formatSeatLease(l.seatLease),
    updatesUntil: l.updatesUntil == null ? null : isoTime(l.updatesUntil),
    features: l.features ?? [],
  };
}

/**
 * `--updates-until ISO|none` and `--features a,b=1|none`, as the create and update inputs take them
 * (`none`: no window, no features).
 */
function modelFlags(f: Readonly<Record<string, string | boolean | undefined>>): { updatesUntil?: string | null; features?: string[] } {
  const body: { updatesUntil?: string | null; features?: string[] } = {};
  const until = f["updates-until"];
  if (typeof until === "string") {
    const ms = until === "none" ? null : parseIsoFlag(USAGE, "updates-until", until);
    body.updatesUntil = ms === null ? null : new Date(ms).toISOString();
  }
  if (typeof f.features === "string") body.features = f.features === "none" ? [] : parseList(f.features);
  return body;
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
  out(`${v.id}  ${v.licensee}${v.organization ? ` (${v.organization})` : ""}`);
  out(`  plan ${v.plan} "${v.planTitle}", channels ${v.channels.join(",")}, seats ${seats}`);
  out(`  issued ${v.issued}, expires ${v.expires ?? "never"}${v.revoked ? `, REVOKED ${v.revoked}` : ""}${v.email ? `, email ${v.email}` : ""}`);
  if (v.tokenTtl !== null) out(`  tokens last ${v.tokenTtl % 86_400 === 0 ? `${v.tokenTtl / 86_400}d` : `${v.tokenTtl}s`} (this license's own lifetime)`);
  if (v.seatLease) out(`  seat lease ${v.seatLease}: a seat whose installation is not seen for that long goes to the next activation`);
  if (v.updatesUntil) out(`  updates until ${v.updatesUntil}: releases released after it are not offered`);
  if (v.features.length > 0) out(`  features ${v.features.join(", ")}`);
}

/**
 * `--token-ttl` on license create/update: this license's own token lifetime (a duration, at most
 * 366d; `default`: the site's). Taken out of the arguments before the settings are read: the
 * setting of the same name (flag, environment, config file) is the site's lifetime, not a license's.
 */
function takeTokenTtl(args: readonly string[]): { ttl: number | null | undefined; rest: string[] } {
  const rest: string[] = [];
  let text: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--token-ttl") text = args[++i] ?? "";
    else if (a.startsWith("--token-ttl=")) text = a.slice("--token-ttl=".length);
    else rest.push(a);
  }
  if (text === undefined) return { ttl: undefined, rest };
  if (text === "default") return { ttl: null, rest };
  try {
    const seconds = parseDuration("token-ttl", text, MAX_TOKEN_TTL);
    if (seconds < TOKEN_TTL_MIN) throw new ConfigError("token-ttl", `must be at least ${TOKEN_TTL_MIN}s`);
    return { ttl: seconds, rest };
  } catch (e) {
    throw new UsageError(USAGE, `--token-ttl: ${(e as Error).message}`);
  }
}

/** The fields `license update` was given, as the update service takes them. */
function updateBody(f: Readonly<Record<string, string | boolean | undefined>>, ttl: number | null | undefined): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (ttl !== undefined) body.tokenTtl = ttl;
  const str = (flag: string) => (typeof f[flag] === "string" ? (f[flag] as string) : undefined);
  if (str("seats") !== undefined) {
    if (!/^\d{1,10}$/.test(str("seats")!)) throw new UsageError(USAGE, "--seats must be a whole number of at least 1");
    body.seats = Number(str("seats"));
  }
  const expires = str("expires") === "never" ? null : parseIsoFlag(USAGE, "expires", str("expires"));
  if (str("expires") !== undefined) body.expires = expires === null ? null : new Date(expires).toISOString();
  if (str("channels") !== undefined) body.channels = parseList(str("channels")!);
  for (const [flag, field] of [
    ["plan", "plan"],
    ["plan-title", "planTitle"],
    ["licensee", "licensee"],
    ["organization", "organization"],
  ] as const)
    if (str(flag) !== undefined) body[field] = str(flag);
  if (str("email") !== undefined) body.email = str("email") === "none" ? null : str("email");
  Object.assign(body, seatLeaseFlag(f), modelFlags(f));
  if (Object.keys(body).length === 0) throw new UsageError(USAGE, "license update needs at least one field to change");
  return body;
}

/** `keyturn license create|list|show|update|revoke|reinstate|rekey`. */
export async function licenseCommand(args: string[], env: Record<string, string | undefined>): Promise<number> {
  const [sub, ...rest] = args;
  if (!sub || !["create", "list", "show", "update", "revoke", "reinstate", "rekey", "renew", "plans"].includes(sub))
    throw new UsageError(USAGE, sub ? `unknown license command "${sub}"` : "missing license command");
  const { ttl, rest: settingArgs } = takeTokenTtl(rest);
  const ctx = await openAdmin(USAGE, settingArgs, env, FLAGS);
  const f = ctx.flags;
  const json = f.json === true;
  /** A new key (create, rekey) with its license; a rekeyed license shows its seats in use. */
  const printWithKey = async (key: string, id: string, withSeats = false) => {
    const license = (await ctx.store.getLicense(id))!;
    const view = licenseView(license, withSeats ? await ctx.store.countActiveSeats(id) : undefined);
    if (json) printJson({ key, ...view });
    else {
      out(`key:  ${key}`);
      out("      (shown this once: keyturn keeps only its hash)");
      printLicense(view);
    }
  };
  try {
    if (sub === "create") {
      for (const name of ["licensee", "plan"])
        if (typeof f[name] !== "string" || !(f[name] as string).trim()) throw new UsageError(USAGE, `--${name} is required`);
      // A configured plan may give seats and channels; without one they are required.
      const planned = findPlan(ctx.config.plans, f.plan as string);
      for (const name of ["seats", "channels"])
        if (f[name] === undefined && !planned?.[name as "seats" | "channels"])
          throw new UsageError(
            USAGE,
            `--${name} is required${planned ? ` (the plan ${planned.name} gives none)` : ctx.config.plans.size > 0 ? ` (no plan ${JSON.stringify((f.plan as string).trim())} is configured: ${[...ctx.config.plans.keys()].join(", ")})` : ""}`,
          );
      const seats = Number(f.seats);
      if (f.seats !== undefined && (!/^\d+$/.test(f.seats as string) || seats < 1)) throw new UsageError(USAGE, "--seats must be a whole number of at least 1");
      const expires = f.expires === "never" ? null : parseIsoFlag(USAGE, "expires", f.expires as string | undefined);
      const input = decode(LicenseCreateInput, {
        licensee: f.licensee as string,
        ...(typeof f.organization === "string" ? { organization: f.organization } : {}),
        plan: f.plan as string,
        ...(typeof f["plan-title"] === "string" ? { planTitle: f["plan-title"] } : {}),
        ...(f.seats !== undefined ? { seats } : {}),
        ...(typeof f.channels === "string" ? { channels: parseList(f.channels) } : {}),
        ...(f.expires === "never" ? { expires: null } : expires === null ? {} : { expires: new Date(expires).toISOString() }),
        ...(typeof f.email === "string" ? { email: f.email } : {}),
        ...(ttl !== undefined ? { tokenTtl: ttl } : {}),
        ...seatLeaseFlag(f),
        ...modelFlags(f),
      });
      const created = await createLicense(ctx.deps, CLI_CALLER, input);
      await printWithKey(created.key, created.license.id);
      return 0;
    }
    if (sub === "plans") {
      const plans = await listPlans(ctx.deps, CLI_CALLER);
      if (json) printJson({ plans });
      else if (plans.length === 0) out("no plans: add [plans.NAME] tables to the configuration file (--config)");
      else
        for (const p of plans)
          out(
            `${p.name}${p.title ? ` "${p.title}"` : ""}: ${[
              p.seats !== null ? `seats ${p.seats}` : "",
              p.channels ? `channels ${p.channels.join(",")}` : "",
              p.features ? `features ${p.features.join(",")}` : "",
              p.seatLease ? `seat lease ${p.seatLease}` : "",
              p.tokenTtl !== null ? `tokens ${durationText(p.tokenTtl)}` : "",
              p.updatesFor !== null ? `updates for ${durationText(p.updatesFor)}` : "",
              p.expiresAfter !== null ? `expires after ${durationText(p.expiresAfter)}` : "",
            ]
              .filter(Boolean)
              .join(", ")}`,
          );
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
    if (sub === "rekey") {
      const rekeyed = await rekeyLicense(ctx.deps, CLI_CALLER, target);
      await printWithKey(rekeyed.key, rekeyed.license.id, true);
      return 0;
    }
    if (sub === "renew") {
      const renewed = await renewLicense(ctx.deps, CLI_CALLER, target, typeof f.plan === "string" ? f.plan : undefined);
      license = (await ctx.store.getLicense(renewed.license.id))!;
    } else if (sub === "show") license = await ctx.admin.findLicense(target);
    else if (sub === "revoke") license = await ctx.admin.revokeLicense(target);
    else {
      const { id } =
        sub === "update"
          ? (await updateLicense(ctx.deps, CLI_CALLER, target, decode(LicenseUpdateInput, updateBody(f, ttl)))).license
          : await reinstateLicense(ctx.deps, CLI_CALLER, target);
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
