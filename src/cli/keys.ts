import { resolveSetting, type Environment } from "../config/settings";
import { VARIANTS, type VariantName } from "../config/variants";
import { defaultKid, generateKeyFiles, KeyExistsError, parseKid, type KeyPurpose } from "../domain/keys";
import { Audit } from "../domain/audit";
import { systemClock } from "../domain/clock";
import { KeyturnError } from "../domain/errors";
import { prepareNextKey, promoteKey } from "../domain/key-rotation";
import { openAdmin } from "./admin-context";
import { err, out, parseFlags, printJson, UsageError } from "./io";
import { rotateRecordsKeyCommand } from "./records-key";

export const USAGE = [
  "keyturn keys generate --variant alpha|beta|gamma [--purpose license|release] [--kid KID] [--keys DIR] [--json]",
  "       keyturn keys rotate --variant V [--kid KID] [--keys DIR] [--json]   (the next license key, published before it signs)",
  "       keyturn keys promote KID --variant V [--keys DIR]                   (that key signs from the next SIGHUP)",
  "       keyturn keys rotate-records-key --variant V [--keys DIR] [--data DIR | --database URL]",
].join("\n");

/** `keyturn keys generate|rotate|promote`: key pairs, and the license key's rotation (src/domain/key-rotation.ts); `keys rotate-records-key`: src/cli/records-key.ts. */
export async function keysCommand(args: string[], env: Environment): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === "rotate-records-key") return rotateRecordsKeyCommand(rest, env);
  if (sub === "rotate" || sub === "promote") return rotationCommand(sub, rest, env);
  if (sub !== "generate") throw new UsageError(USAGE, sub ? `unknown keys command "${sub}"` : "missing keys command");
  const { values } = parseFlags(USAGE, {
    args: rest,
    options: { variant: { type: "string" }, purpose: { type: "string" }, kid: { type: "string" }, keys: { type: "string" }, json: { type: "boolean" } },
    strict: true,
  });
  const variantName = resolveSetting("variant", { given: values.variant, env });
  if (!variantName || !Object.hasOwn(VARIANTS, variantName)) throw new UsageError(USAGE, "--variant must be alpha, beta or gamma");
  const variant = VARIANTS[variantName as VariantName];
  const purpose = (values.purpose ?? "license") as KeyPurpose;
  if (purpose !== "license" && purpose !== "release") throw new UsageError(USAGE, "--purpose must be license or release");
  const kid = values.kid ?? defaultKid(variant, purpose, new Date());
  const parsed = parseKid(kid);
  if (!parsed || parsed.variant !== variant.name || parsed.purpose !== purpose)
    throw new UsageError(USAGE, `--kid must look like ${variant.name}-${purpose}-YYYY-MM (got "${kid}")`);
  const dir = resolveSetting("keys", { given: values.keys, env })!;
  try {
    const key = generateKeyFiles(dir, kid);
    if (values.json) printJson({ kid: key.kid, spki: key.spki, file: key.privatePath });
    else {
      out(`kid:  ${key.kid}`);
      out(`spki: ${key.spki}`);
      out(`file: ${key.privatePath} (mode 0600; keep it secret)`);
    }
    return 0;
  } catch (e) {
    if (e instanceof KeyExistsError) {
      err(`keyturn: ${e.message}; refusing to overwrite it`);
      return 1;
    }
    throw e;
  }
}

/** `keys rotate` and `keys promote`: each changes what will sign, so each writes an audit line in the records. */
async function rotationCommand(sub: "rotate" | "promote", args: string[], env: Environment): Promise<number> {
  const ctx = await openAdmin(USAGE, args, env, { kid: { type: "string" }, json: { type: "boolean" } });
  try {
    const { keysDir, variant } = ctx.config;
    const audit = new Audit(ctx.store, systemClock);
    if (sub === "rotate") {
      if (ctx.positionals.length > 0) throw new UsageError(USAGE, `unexpected argument "${ctx.positionals[0]!}"`);
      const next = await prepareNextKey(keysDir, variant, new Date(systemClock()), typeof ctx.flags.kid === "string" ? ctx.flags.kid : undefined);
      await audit.ok("key-rotate", { address: null, actor: `cli (next key ${next.kid})` }, {});
      if (ctx.flags.json === true) printJson({ kid: next.kid, spki: next.spki, file: next.privatePath, signing: next.signing });
      else {
        out(`next key: ${next.kid} (published, not signing; ${next.signing} keeps signing)`);
        out(`spki:     ${next.spki}`);
        out(`file:     ${next.privatePath} (mode 0600; keep it secret)`);
        out("then: SIGHUP every keyturn process, ship builds carrying both keys, let mirrors follow their feed;");
        out(`then: keyturn keys promote ${next.kid}, and SIGHUP again (docs/operating.md "Rotating the license key")`);
      }
      return 0;
    }
    const [kid, ...extra] = ctx.positionals;
    if (!kid || extra.length > 0) throw new UsageError(USAGE, "keys promote needs one KID");
    const { previous } = await promoteKey(keysDir, variant, kid);
    await audit.ok("key-promote", { address: null, actor: `cli (signing key ${kid})` }, {});
    out(`${kid} signs from the next SIGHUP (or start) of each keyturn process${previous && previous !== kid ? `; ${previous} keeps verifying` : ""}`);
    return 0;
  } catch (e) {
    if (e instanceof KeyturnError || e instanceof KeyExistsError) {
      err(`keyturn: ${e.message}`);
      return 1;
    }
    throw e;
  } finally {
    await ctx.store.close();
  }
}
