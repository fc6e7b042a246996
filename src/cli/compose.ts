import { join } from "node:path";
import type { Config } from "../config/config";
import { createLogger, type Logger } from "../config/log";
import { Audit } from "../domain/audit";
import { systemClock, type Clock } from "../domain/clock";
import { loadKeyRing, type KeyRing } from "../domain/keys";
import { KeyturnError } from "../domain/errors";
import { Licensing } from "../domain/licensing";
import { StaffSignIn } from "../domain/identity/staff-sign-in";
import { AdoptionRecorder } from "../domain/adoption";
import { ReleaseHolder } from "../domain/releases/holder";
import { ReleasePublications } from "../domain/releases/publications";
import { ReleaseControls } from "../domain/releases/release-controls";
import { ReleaseSelection } from "../domain/releases/release-selection";
import { SignatureCache } from "../domain/releases/signature-cache";
import { releaseKeysOf } from "../domain/releases/signature";
import { Site } from "../domain/site";
import { TokenSigner, TokenVerifier } from "../domain/tokens";
import type { AppServices } from "../http/deps";
import { RateLimiter } from "../http/rate-limit";
import { MemoryRateLimitStore } from "../store/memory-rate-limit";
import { sharedRateLimitStore } from "../store/rate-limit-fallback";
import type { RateLimitStore } from "../store/rate-limit";
import { openPostgresStore } from "../store/postgres";
import { openSqliteStore } from "../store/sqlite";
import type { Store } from "../store/types";
import { VERSION } from "../version";

export interface Composed {
  readonly config: Config;
  readonly store: Store;
  readonly keys: KeyRing;
  readonly services: AppServices;
  /** Closed at shutdown, after the server has drained. */
  readonly rateLimitStore: RateLimitStore;
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
  opts: {
    clock?: Clock;
    log?: Logger;
    store?: Store;
    peerAddress?: (r: Request) => string | null;
    rateLimitStore?: RateLimitStore;
    /** Re-scan the release tree when it changes (the server does; commands and tests need not). */
    watchReleases?: boolean;
  } = {},
): Promise<Composed> {
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? createLogger(config.logFormat, config.logLevel);
  const store = opts.store ?? (await openStore(config));
  const keys = await loadKeyRing(config.keysDir, config.variant);
  for (const w of keys.warnings) log.warn(w);
  const audit = new Audit(store, clock);
  const signer = keys.signing ? new TokenSigner(config.variant, config.baseUrl, keys.signing) : null;
  const verifier = new TokenVerifier(config.variant, config.baseUrl, keys, clock, config.tokenCacheSize);
  const adoption = new AdoptionRecorder(store, clock, log);
  if (opts.watchReleases) adoption.start();
  const licensing = new Licensing({
    variant: config.variant,
    store,
    clock,
    audit,
    signer,
    verifier,
    tokenTtlSeconds: config.tokenTtlSeconds,
    adoption,
  });
  const controls = new ReleaseControls(store, clock, config.variant);
  const selection = new ReleaseSelection(config.variant, controls, clock);
  const publications = new ReleasePublications(store, clock, (published) => {
    for (const release of published) log.info("release published", { lane: release.lane, version: release.version });
  });
  const staffSignIn = new StaffSignIn({
    variant: config.variant,
    identity: config.identity,
    staffOrganization: config.staffOrganization,
    staffSeats: config.staffSeats,
    store,
    clock,
    log,
    licensing,
  });
  const releases = new ReleaseHolder({
    root: config.releasesDir,
    variant: config.variant,
    releaseKeys: releaseKeysOf(keys),
    signatures: SignatureCache.open(config.databaseUrl ? null : join(config.dataDir, "release-signatures.cache")),
    snapshotFile: config.databaseUrl ? null : join(config.dataDir, "release-index.snapshot"),
    log,
    onScanned: (index) =>
      void publications.scanned(index).catch((e) => log.error("published releases not recorded", { error: String((e as Error)?.message ?? e) })),
  });
  // The first scan starts once the caller has started listening (after this turn of the event
  // loop), so a big tree does not delay the first answer; update requests wait for the index.
  setImmediate(() => void releases.start({ watch: opts.watchReleases }));
  const memoryCounters = new MemoryRateLimitStore();
  const sharedCounters = config.rateLimit.store ? sharedRateLimitStore(config.rateLimit.store, memoryCounters, log) : null;
  const rateLimitStore = opts.rateLimitStore ?? sharedCounters ?? memoryCounters;
  const rateLimiter = new RateLimiter(rateLimitStore, config.rateLimit, clock, log);
  const site = new Site({
    variant: config.variant,
    version: VERSION,
    store,
    keys,
    releasesDir: config.releasesDir,
    releasesReady: () => releases.current !== null,
    staffSignIn: config.identity !== null,
    rateLimits: () => (!sharedCounters ? "per-process" : sharedCounters.degraded ? "per-process (shared store unreachable)" : "shared"),
  });
  return {
    config,
    store,
    keys,
    rateLimitStore,
    services: {
      variant: config.variant,
      licensing,
      audit,
      log,
      clock,
      peerAddress: opts.peerAddress,
      rateLimiter,
      trustProxy: config.trustProxy,
      site,
      staffSignIn,
      releases,
      selection,
      adoption,
    },
  };
}
