import type { Config } from "../config/config";
import { createLogger, type Logger } from "../config/log";
import { Audit } from "../domain/audit";
import { systemClock, type Clock } from "../domain/clock";
import { loadKeyRing, type KeyRing } from "../domain/keys";
import { KeyturnError } from "../domain/errors";
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
  if (config.databaseUrl) return openPostgresStore(config.databaseUrl).catch(cannotOpen);
  return openSqliteStore(config.dataDir);
}

// One clear line instead of a driver stack trace; the URL (which may hold a password) is not repeated.
function cannotOpen(e: unknown): never {
  const code = (e as { code?: string }).code;
  throw new KeyturnError("unavailable", `cannot open the records in PostgreSQL: ${(e as Error).message}${code ? ` (${code})` : ""}`);
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
