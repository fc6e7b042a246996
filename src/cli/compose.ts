import type { Config } from "../config/config";
import { createLogger, type Logger } from "../config/log";
import { Audit } from "../domain/audit";
import { systemClock, type Clock } from "../domain/clock";
import { loadKeyRing, type KeyRing } from "../domain/keys";
import { Licensing } from "../domain/licensing";
import { TokenSigner, TokenVerifier } from "../domain/tokens";
import type { AppServices } from "../http/deps";
import { openPostgresStore } from "../store/postgres";
import { openSqliteStore } from "../store/sqlite";
import type { Store } from "../store/types";

export interface Composed {
  readonly config: Config;
  readonly store: Store;
  readonly keys: KeyRing;
  readonly services: AppServices;
}

/** Opens the records the configuration names (SQLite in --data unless --database is given). */
export async function openStore(config: Config): Promise<Store> {
  if (config.databaseUrl) return openPostgresStore(config.databaseUrl);
  return openSqliteStore(config.dataDir);
}

/** Wires the services of one keyturn process from its configuration. */
export async function compose(
  config: Config,
  opts: { clock?: Clock; log?: Logger; store?: Store; peerAddress?: (r: Request) => string | null } = {},
): Promise<Composed> {
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? createLogger(config.logFormat, config.logLevel);
  const store = opts.store ?? (await openStore(config));
  const keys = await loadKeyRing(config.keysDir, config.variant);
  for (const w of keys.warnings) log.warn(w);
  const audit = new Audit(store, clock);
  const signer = keys.signing ? new TokenSigner(config.variant, config.baseUrl, keys.signing) : null;
  const verifier = new TokenVerifier(config.variant, config.baseUrl, keys, clock, config.tokenCacheSize);
  const licensing = new Licensing({
    variant: config.variant,
    store,
    clock,
    audit,
    signer,
    verifier,
    tokenTtlSeconds: config.tokenTtlSeconds,
  });
  return {
    config,
    store,
    keys,
    services: { variant: config.variant, licensing, audit, log, clock, peerAddress: opts.peerAddress },
  };
}
