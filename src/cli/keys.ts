import { resolveSetting, type Environment } from "../config/settings";
import { VARIANTS, type VariantName } from "../config/variants";
import { defaultKid, generateKeyFiles, KeyExistsError, parseKid, type KeyPurpose } from "../domain/keys";
import { err, out, printJson, UsageError } from "./io";
import { rotateRecordsKeyCommand } from "./records-key";
import { parseArgs } from "node:util";

export const USAGE = "keyturn keys generate --variant alpha|beta|gamma [--purpose license|release] [--kid KID] [--keys DIR] [--json]\n       keyturn keys rotate-records-key --variant V [--keys DIR] [--data DIR | --database URL]";

/** `keyturn keys generate`: a new P-256 key pair; prints the kid and the SPKI vendors compile in. `keys rotate-records-key`: src/cli/records-key.ts. */
export async function keysCommand(args: string[], env: Environment): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === "rotate-records-key") return rotateRecordsKeyCommand(rest, env);
  if (sub !== "generate") throw new UsageError(USAGE, sub ? `unknown keys command "${sub}"` : "missing keys command");
  let values;
  try {
    ({ values } = parseArgs({
      args: rest,
      options: { variant: { type: "string" }, purpose: { type: "string" }, kid: { type: "string" }, keys: { type: "string" }, json: { type: "boolean" } },
      strict: true,
    }));
  } catch (e) {
    throw new UsageError(USAGE, (e as Error).message);
  }
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
