import type { Logger } from "../config/log";
import type { SiteOrigin } from "../config/site-origin";
import type { Variant } from "../config/variants";
import type { AdminDeps } from "../domain/admin/deps";
import type { Audit } from "../domain/audit";
import type { Clock } from "../domain/clock";
import type { CommerceBridges } from "../domain/commerce/bridge";
import type { Licensing } from "../domain/licensing";
import type { Metering } from "../domain/meters";
import type { Trials } from "../domain/trials";
import type { StaffSignIn } from "../domain/identity/staff-sign-in";
import type { ConsoleOpenId } from "../domain/identity/console-sign-in";
import type { ConsoleSessions } from "../domain/console-sessions";
import type { AdoptionRecorder } from "../domain/adoption";
import type { InstallReports } from "../domain/releases/install-reports";
import type { FeedService } from "../domain/releases/feeds";
import type { PublicLanes } from "../domain/releases/public-lanes";
import type { FeedCredentials } from "../domain/feed-credential";
import type { ReleaseHolder } from "../domain/releases/holder";
import type { ReleaseSelection } from "../domain/releases/release-selection";
import type { ReleaseUploads } from "../domain/releases/uploads";
import type { Site } from "../domain/site";
import type { Metrics } from "./metrics";
import type { RateLimiter } from "./rate-limit";

/** What createApp is built from; src/compose.ts (the composition root) assembles it, for the server, the commands and the tests. */
export interface AppServices {
  readonly variant: Variant;
  readonly licensing: Licensing;
  /** Metered use spent with a bearer (POST /entitlements/usage). */
  readonly metering: Metering;
  /** Trials without a key (POST /trials/start). */
  readonly trials: Trials;
  readonly staffSignIn: StaffSignIn;
  /** Console and portal sessions (server-side; the browser holds a cookie). */
  readonly consoleSessions: ConsoleSessions;
  /** Console sign-in with the vendor's OpenID issuer; null when --console-groups is not set. */
  readonly consoleOpenId: ConsoleOpenId | null;
  readonly audit: Audit;
  readonly log: Logger;
  readonly clock: Clock;
  /** The live release index of the release tree (re-scanned on change). */
  readonly releases: ReleaseHolder;
  /** Which release each installation is served (staged rollouts, release controls). */
  readonly selection: ReleaseSelection;
  /** The feeds of the updaters vendors already use (electron-updater, Tauri, Sparkle, Velopack). */
  readonly feeds: FeedService;
  /** The lanes answered without a bearer (--public-lanes). */
  readonly publicLanes: PublicLanes;
  /** Feed credentials in the URL, for updaters that cannot send the Authorization header. */
  readonly feedCredentials: FeedCredentials;
  /** Last-seen times and lanes of installations, written in batches. */
  readonly adoption: AdoptionRecorder;
  /** Install outcome reports, written in batches; each write is followed by the automatic halt's look. */
  readonly installReports: InstallReports;
  /**
   * The address of the peer that sent the request. Under Bun.serve it is the socket's address;
   * tests that drive `app.handle` pass their own.
   */
  readonly peerAddress?: (request: Request) => string | null;
  /** Counts every request against its client's budget before anything else is done. */
  readonly rateLimiter: RateLimiter;
  /** CIDRs of proxies whose X-Forwarded-For is believed (config.trustProxy). */
  readonly trustProxy: readonly string[];
  /** The site's public origin (--base-url), whoever terminates TLS. */
  readonly origin: SiteOrigin;
  /** Health and metadata (GET /health, /meta). */
  readonly site: Site;
  /** What the admin services need (records, clock, token lifetime). */
  readonly admin: AdminDeps;
  /** The commerce bridges (/api/v1/hooks/{provider}). */
  readonly bridges: CommerceBridges;
  /** Signed release folders sent by a vendor's CI (`keyturn release push`), checked and moved into the tree. */
  readonly uploads: ReleaseUploads;
  /** Prometheus metrics, when `--metrics-listen` is set. */
  readonly metrics?: Metrics;
}
