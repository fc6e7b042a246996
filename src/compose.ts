import { join } from "node:path";
import type { Config } from "./config/config";
import { createLogger, type Logger } from "./config/log";
import { siteOrigin } from "./config/site-origin";
import { Audit } from "./domain/audit";
import { systemClock, type Clock } from "./domain/clock";
import { KeyHolder } from "./domain/key-holder";
import { KeyturnError } from "./domain/errors";
import { Licensing } from "./domain/licensing";
import { Metering } from "./domain/meters";
import { TrialConversion, Trials } from "./domain/trials";
import { StaffSignIn } from "./domain/identity/staff-sign-in";
import { ConsoleOpenId, consoleScopes } from "./domain/identity/console-sign-in";
import { ConsoleSessions } from "./domain/console-sessions";
import { AdoptionRecorder } from "./domain/adoption";
import { FeedService } from "./domain/releases/feeds";
import { PublicLanes } from "./domain/releases/public-lanes";
import { FeedCredentials } from "./domain/feed-credential";
import { ReleaseHolder } from "./domain/releases/holder";
import { InstallReports } from "./domain/releases/install-reports";
import { ReleaseHealthWatch } from "./domain/releases/release-health";
import { InstallerVerifier } from "./domain/releases/installer-verification";
import { MailOutbox } from "./domain/mail/outbox";
import { RecordSeal } from "./domain/record-seal";
import { checkRecordsVariant } from "./domain/records-variant";
import { ReleasePublications } from "./domain/releases/publications";
import { ReleaseControls } from "./domain/releases/release-controls";
import { ReleaseSelection } from "./domain/releases/release-selection";
import { SignatureCache } from "./domain/releases/signature-cache";
import { releaseKeysOf } from "./domain/releases/signature";
import { ReleaseUploads } from "./domain/releases/uploads";
import { RecordsStatusSource } from "./domain/entitlement-status";
import { MirrorFollower } from "./domain/mirror/follower";
import { MirrorKnowledge } from "./domain/mirror/knowledge";
import { Site } from "./domain/site";
import { TokenSigner, TokenVerifier } from "./domain/tokens";
import type { AppServices } from "./http/deps";
import type { AdminDeps } from "./domain/admin/deps";
import { CommerceBridges } from "./domain/commerce/bridge";
import { createMetrics } from "./http/metrics";
import { RateLimiter } from "./http/rate-limit";
import { MemoryRateLimitStore } from "./store/memory-rate-limit";
import { sharedRateLimitStore } from "./store/rate-limit-fallback";
import type { RateLimitStore } from "./store/rate-limit";
import { openPostgresStore } from "./store/postgres";
import { SqliteMirrorState } from "./store/mirror-state";
import { openSqliteStore, SqliteStore } from "./store/sqlite";
import { mailStoreOf } from "./store/mail-store";
import type { Store } from "./store/types";
import { VERSION } from "./version";

export interface Composed {
  readonly config: Config;
  readonly store: Store;
  /** The keys, read again on SIGHUP (KeyHolder.reload) and, on a mirror, taught by the vendor's feed. */
  readonly keys: KeyHolder;
  readonly services: AppServices;
  /** Closed at shutdown, after the server has drained. */
  readonly rateLimitStore: RateLimitStore;
  /** On a mirror, the follower of the vendor's feed (started by the caller); else null. */
  readonly mirror: MirrorFollower | null;
}

/**
 * Opens the records the configuration names (SQLite in --data unless --database is given), and
 * refuses those of another variant (checkRecordsVariant).
 */
export async function openStore(config: Config): Promise<Store> {
  const store = config.databaseUrl ? await openPostgresStore(config.databaseUrl).catch(cannotOpen) : openSqliteStore(config.dataDir);
  try {
    await checkRecordsVariant(store, config.variant.name, systemClock());
  } catch (e) {
    await store.close();
    throw e;
  }
  return store;
}

// One clear line instead of a driver stack trace; the URL (which may hold a password) is not repeated.
function cannotOpen(e: unknown): never {
  const code = (e as { code?: string }).code;
  throw new KeyturnError("unavailable", `cannot open the records in PostgreSQL: ${(e as Error).message}${code ? ` (${code})` : ""}`);
}

function sqliteDatabase(store: Store) {
  if (!(store instanceof SqliteStore)) throw new KeyturnError("unavailable", "a mirror keeps what it learns from its vendor in SQLite (--data)");
  return store.db;
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
    /** A mirror's backoff jitter and feed request timeout (tests pass their own). */
    random?: () => number;
    mirrorRequestTimeoutMs?: number;
    /** A mirror's bound on entries kept (tests pass a small one). */
    mirrorMaxEntries?: number;
  } = {},
): Promise<Composed> {
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? createLogger(config.logFormat, config.logLevel);
  const store = opts.store ?? (await openStore(config));
  const keys = await KeyHolder.open(config.keysDir, config.variant);
  for (const w of keys.warnings) log.warn(w);
  const audit = new Audit(store, clock);
  const mirrorConfig = config.mirror;
  if (mirrorConfig && keys.signing) throw new KeyturnError("unavailable", `a mirror holds no private key, but ${config.keysDir} has ${keys.signing.kid}.pem`);
  // The signer follows the key that signs now: a promotion takes effect at the next reload (SIGHUP).
  let signer: TokenSigner | null = null;
  const signerNow = () => {
    const signing = keys.signing;
    if (signing === null) return null;
    if (signer?.signingKey !== signing) signer = new TokenSigner(config.variant, config.baseUrl, signing);
    return signer;
  };
  const mirrorState = mirrorConfig ? new SqliteMirrorState(sqliteDatabase(store)) : null;
  const knowledge = mirrorConfig
    ? new MirrorKnowledge(
        mirrorConfig.of,
        clock,
        mirrorConfig.maxStalenessSeconds,
        mirrorState!,
        { channels: config.variant.channels, platforms: config.variant.platforms },
        (kid) => keys.verify.has(kid),
      )
    : null;
  // A mirror accepts its vendor's tokens: their iss is the vendor's address, not the mirror's.
  const verifier = new TokenVerifier(config.variant, mirrorConfig?.of ?? config.baseUrl, keys, clock, config.tokenCacheSize, (kid) => {
    if (knowledge && keys.learnable(kid)) knowledge.noteUnknownKey(kid);
  });
  const controls = new ReleaseControls(store, clock, config.variant);
  const mirror = mirrorConfig
    ? new MirrorFollower({
        of: mirrorConfig.of,
        token: mirrorConfig.token,
        pollMs: mirrorConfig.pollMs,
        state: mirrorState!,
        knowledge: knowledge!,
        keys,
        clock,
        random: opts.random ?? Math.random,
        log,
        onRevoked: (match) => verifier.evict(match),
        onReplaced: () => verifier.evictIf((claims) => knowledge!.refuses(claims)),
        onKeysRemoved: () => verifier.clear(),
        requestTimeoutMs: opts.mirrorRequestTimeoutMs,
        maxEntries: opts.mirrorMaxEntries ?? mirrorConfig.maxEntries,
      })
    : null;
  if (mirror) await mirror.keysLoaded;
  const adoption = new AdoptionRecorder(store, clock, log);
  if (opts.watchReleases) adoption.start();
  // Only a site that gives trials looks for one to convert: others activate as before.
  const conversion = config.trial && !mirrorConfig ? new TrialConversion({ store, clock, audit, tokenTtlSeconds: config.tokenTtlSeconds }) : null;
  const licensing = new Licensing({
    variant: config.variant,
    store,
    clock,
    audit,
    get signer() {
      return signerNow();
    },
    verifier,
    status: knowledge ?? new RecordsStatusSource(store, clock),
    tokenTtlSeconds: config.tokenTtlSeconds,
    offlineTokenTtlSeconds: config.offlineTokenTtlSeconds,
    mirrorOf: mirrorConfig?.of ?? null,
    adoption,
    ...(conversion ? { afterActivation: (license, deviceHash, ctx) => conversion.activated(license, deviceHash, ctx) } : {}),
  });
  const trials = new Trials({ variant: config.variant, store, clock, audit, licensing, trial: config.trial });
  const selection = new ReleaseSelection(config.variant, controls, clock, store);
  const publications = new ReleasePublications(store, clock, (published) => {
    for (const release of published) log.info("release published", { lane: release.lane, version: release.version });
  });
  const staffSignIn = new StaffSignIn({
    variant: config.variant,
    identity: mirrorConfig ? null : config.identity,
    staffOrganization: config.staffOrganization,
    staffSeats: config.staffSeats,
    store,
    clock,
    log,
    licensing,
  });
  const consoleGroups = config.identity?.consoleGroups ?? new Map<string, readonly string[]>();
  const consoleScopeMap = consoleScopes(consoleGroups);
  const consoleSessions = new ConsoleSessions({ store, clock, consoleGroups: consoleScopeMap });
  const consoleOpenId =
    config.identity && consoleGroups.size > 0 && !mirrorConfig
      ? new ConsoleOpenId({ identity: config.identity, scopes: consoleScopeMap, sessions: consoleSessions, clock, log })
      : null;
  const releases = new ReleaseHolder({
    root: config.releasesDir,
    variant: config.variant,
    releaseKeys: releaseKeysOf(keys),
    signatures: SignatureCache.open(config.databaseUrl ? null : join(config.dataDir, "release-signatures.cache")),
    snapshotFile: config.databaseUrl ? null : join(config.dataDir, "release-index.snapshot"),
    installers: InstallerVerifier.open(config.databaseUrl ? null : join(config.dataDir, "release-installers.cache")),
    // Written and removed at once (release-table-rows.ts); where the data directory cannot be written, in memory.
    tableDir: config.dataDir,
    log,
    clock,
    onScanned: (index) =>
      void publications.scanned(index).catch((e) => log.error("published releases not recorded", { error: String((e as Error)?.message ?? e) })),
  });
  // The first scan starts once the caller has started listening (after this turn of the event
  // loop), so a big tree does not delay the first answer; update requests wait for the index.
  setImmediate(() => void releases.start({ watch: opts.watchReleases }));
  const releaseUploads = new ReleaseUploads({
    variant: config.variant,
    store,
    clock,
    stagingDir: join(config.dataDir, "uploads"),
    releasesRoot: config.releasesDir,
    releaseKeys: () => releaseKeysOf(keys),
    index: () => releases.current,
    rescan: () => releases.rescan(),
    mirror: mirrorConfig !== null && mirrorConfig !== undefined,
  });
  // Abandoned uploads are removed once expired: at start (those left while the site was down) and hourly.
  if (opts.watchReleases) {
    releaseUploads.sweep();
    setInterval(() => releaseUploads.sweep(), 3_600_000).unref();
  }
  const memoryCounters = new MemoryRateLimitStore();
  const rateLimitSite = `${new URL(config.baseUrl).origin}/${config.variant.name}`;
  const sharedCounters = config.rateLimit.store ? sharedRateLimitStore(config.rateLimit.store, rateLimitSite, memoryCounters, log) : null;
  const rateLimitStore = opts.rateLimitStore ?? sharedCounters ?? memoryCounters;
  const rateLimiter = new RateLimiter(rateLimitStore, config.rateLimit, clock, log);
  const rateLimits = () => (!sharedCounters ? "per-process" : sharedCounters.degraded ? "per-process (shared store unreachable)" : "shared");
  const site = new Site({
    variant: config.variant,
    version: VERSION,
    store,
    keys,
    releasesDir: config.releasesDir,
    releasesReady: () => releases.current !== null,
    releaseTree: () => ({ changes: releases.changeDetection, installersVerifying: releases.installersVerifying, startVerified: releases.startVerified }),
    staffSignIn: config.identity !== null && !mirrorConfig,
    trials: config.trial !== null && !mirrorConfig,
    rateLimits,
    ...(knowledge ? { mirror: () => knowledge.status() } : {}),
  });
  const installReports = new InstallReports(store, clock, log);
  const releaseHealth = new ReleaseHealthWatch(config.variant, store, clock, controls, () => releases.current, log);
  installReports.afterFlush = async (reported) => void (await releaseHealth.check(reported));
  if (opts.watchReleases) installReports.start();
  const seal = new RecordSeal(config.keysDir, store);
  const metrics = config.metricsListen
    ? createMetrics({ clock, releases, tokenLookups: verifier.lookups, pingRecords: () => store.ping(), rateLimits, version: VERSION })
    : undefined;
  const admin: AdminDeps = {
    variant: config.variant,
    store,
    clock,
    tokenTtlSeconds: config.tokenTtlSeconds,
    webhookDestinations: { allowHosts: config.webhookAllowHosts },
    seal,
    keys,
    plans: config.plans,
    ...(config.mail ? { mail: new MailOutbox({ config: config.mail, baseUrl: config.baseUrl, store: mailStoreOf(store), clock, seal }) } : {}),
  };
  return {
    config,
    store,
    keys,
    rateLimitStore,
    mirror,
    services: {
      variant: config.variant,
      licensing,
      metering: new Metering({ store, clock, audit, mirrorOf: mirrorConfig?.of ?? null }),
      trials,
      audit,
      log,
      clock,
      peerAddress: opts.peerAddress,
      rateLimiter,
      trustProxy: config.trustProxy,
      origin: siteOrigin(config.baseUrl),
      site,
      staffSignIn,
      consoleSessions,
      consoleOpenId,
      releases,
      metrics,
      admin,
      bridges: new CommerceBridges(admin, config.bridges),
      selection,
      feeds: new FeedService(config.variant, config.baseUrl, releases, selection),
      publicLanes: new PublicLanes(config.variant, config.publicLanes),
      feedCredentials: new FeedCredentials({
        variant: config.variant,
        baseUrl: config.baseUrl,
        issuer: mirrorConfig?.of ?? config.baseUrl,
        keys,
        clock,
        signer: signerNow,
        status: knowledge ?? new RecordsStatusSource(store, clock),
        mirrorOf: mirrorConfig?.of ?? null,
      }),
      adoption,
      installReports,
      uploads: releaseUploads,
    },
  };
}
