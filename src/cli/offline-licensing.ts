import { ConfigError } from "../config/parse";
import { Audit } from "../domain/audit";
import { systemClock } from "../domain/clock";
import { RecordsStatusSource } from "../domain/entitlement-status";
import { loadKeyRing, unusableLicenseKeys } from "../domain/keys";
import { Licensing } from "../domain/licensing";
import { TokenSigner, TokenVerifier } from "../domain/tokens";
import type { AdminContext } from "./admin-context";

/**
 * Licensing as `serve` has it, for a command that issues tokens itself (activation offline): the
 * site's newest license key from --keys, its address as the tokens' issuer, its token lifetime.
 */
export async function offlineLicensing(ctx: AdminContext): Promise<Licensing> {
  const { config, store } = ctx;
  if (config.mirror) throw new ConfigError("mirror-of", "a mirror issues no tokens: answer offline requests at the vendor");
  const unusable = unusableLicenseKeys(config.keysDir, config.variant);
  if (unusable.length > 0) throw new ConfigError("keys", unusable.map((u) => `${u.path} ${u.why}`).join("; "));
  const keys = await loadKeyRing(config.keysDir, config.variant);
  if (!keys.signing) throw new ConfigError("keys", `no ${config.variant.name}-license-*.pem in ${config.keysDir}: nothing to sign the answer with`);
  return new Licensing({
    variant: config.variant,
    store,
    clock: systemClock,
    audit: new Audit(store, systemClock),
    signer: new TokenSigner(config.variant, config.baseUrl, keys.signing),
    verifier: new TokenVerifier(config.variant, config.baseUrl, keys, systemClock, 0),
    status: new RecordsStatusSource(store, systemClock),
    tokenTtlSeconds: config.tokenTtlSeconds,
    offlineTokenTtlSeconds: config.offlineTokenTtlSeconds,
  });
}
