import { constants } from "node:fs";
import { access, readdir } from "node:fs/promises";
import { hasProducts, type Variant } from "../config/variants";
import type { Store } from "../store/types";
import { KeyturnError } from "./errors";
import { licenseKeyRole, type KeyRing, type KeyPurpose, type LicenseKeyRole } from "./keys";
import type { MirrorStatus } from "./mirror/knowledge";
import type { ChangeDetection } from "./releases/tree-watch";

/** docs/architecture.md's answer of GET /meta (without `ok`). */
export interface SiteMeta {
  readonly service: "keyturn";
  readonly version: string;
  readonly variant: string;
  readonly products?: readonly string[];
  readonly features: {
    /** A license signing key exists: activate, refresh and exchange can issue tokens. */
    readonly licensing: boolean;
    readonly staffSignIn: boolean;
    /** The release tree is readable, so the update endpoints can answer. */
    readonly updates: boolean;
    /** Always on: every request counts against its address's budget. */
    readonly rateLimit: boolean;
    /** Only on a site that offers trials without a key (docs/trials-and-meters.md): absent otherwise. */
    readonly trials?: true;
  };
  /** Public keys: license keys (tokens) and release keys (manifests), newest last within each purpose. */
  readonly keys: readonly { readonly kid: string; readonly purpose: KeyPurpose; readonly spki: string; readonly role?: LicenseKeyRole }[];
  /** Only on a mirror: whose site it mirrors, and when it last heard from it. */
  readonly mirror?: { readonly of: string; readonly lastSync: string | null };
}

export interface SiteDeps {
  readonly variant: Variant;
  readonly version: string;
  readonly store: Store;
  readonly keys: KeyRing;
  readonly releasesDir: string;
  /** Whether the first release index is there: until then the update routes wait, so the site is not ready. */
  readonly releasesReady: () => boolean;
  readonly staffSignIn: boolean;
  /** Whether POST /trials/start gives trials (--trial-plan, not a mirror). */
  readonly trials?: boolean;
  /** How changes to the release tree are noticed, and how many installers are still being hashed. */
  readonly releaseTree?: () => { readonly changes: ChangeDetection; readonly installersVerifying: number; readonly startVerified?: boolean };
  /** Where rate-limit counters are kept right now (Redis may be away: then per process). */
  readonly rateLimits: () => RateLimitMode;
  /** A mirror's state of its vendor's feed; absent on the vendor's own site. */
  readonly mirror?: () => MirrorStatus;
}

export type RateLimitMode = "per-process" | "shared" | "per-process (shared store unreachable)";

/** Details of a healthy answer: what an operator wants to see at a glance. */
export interface HealthDetails {
  readonly rateLimits: RateLimitMode;
  /** on: tokens can be issued; off: no license key (by design before one exists: beta); at-vendor: a mirror. */
  readonly licensing: "on" | "off" | "at-vendor";
  readonly mirror?: Omit<MirrorStatus, "refusing">;
  /** Only when the tree cannot be watched: how it is re-scanned instead, and why. */
  readonly releaseChanges?: string;
  /** Only while some are: installers being hashed, whose releases are not served yet. */
  readonly installersVerifying?: number;
  /** degraded: the site serves, but not all it should (a mirror that cannot verify a key, or skips lanes). */
  readonly status: "ok" | "degraded";
  /** Only when degraded: what, each in a sentence. */
  readonly degraded?: readonly string[];
}

/** Health and metadata of this keyturn site. */
export class Site {
  constructor(private readonly deps: SiteDeps) {}

  /** Throws `unavailable` unless the records answer, the first release index is built and the release tree can be read. */
  async health(): Promise<HealthDetails> {
    try {
      await this.deps.store.ping();
    } catch {
      throw new KeyturnError("unavailable", "The records cannot be reached.");
    }
    if (!this.deps.releasesReady()) throw new KeyturnError("unavailable", "The release index is being built; try again shortly.");
    if (!(await this.releasesReadable())) throw new KeyturnError("unavailable", "The release tree cannot be read.");
    const tree = this.deps.releaseTree?.();
    if (tree?.startVerified === false)
      throw new KeyturnError("unavailable", `Installers found at start are being hashed (${tree.installersVerifying} left); try again shortly.`);
    const changes = tree?.changes;
    const mirror = this.deps.mirror?.();
    // A mirror that had to refuse part of what its vendor revoked refuses every bearer request: it is not serving.
    if (mirror?.refusing) throw new KeyturnError("unavailable", `The mirror refuses every bearer request: ${mirror.refusing}.`);
    const degraded = mirror?.degraded ?? [];
    return {
      status: degraded.length > 0 ? "degraded" : "ok",
      ...(degraded.length > 0 ? { degraded } : {}),
      rateLimits: this.deps.rateLimits(),
      licensing: this.deps.mirror ? "at-vendor" : this.deps.keys.signing ? "on" : "off",
      ...(mirror ? { mirror: mirrorHealth(mirror) } : {}),
      ...(changes?.mode === "periodic" ? { releaseChanges: `re-scanned every ${changes.everyMs / 1000} s: ${changes.reason}` } : {}),
      ...(tree && tree.installersVerifying > 0 ? { installersVerifying: tree.installersVerifying } : {}),
    };
  }

  async meta(): Promise<SiteMeta> {
    const { variant, keys } = this.deps;
    const published = [...keys.verify.values()]
      .sort((a, b) => (a.purpose === b.purpose ? (a.kid < b.kid ? -1 : 1) : a.purpose === "license" ? -1 : 1))
      // A mirror (or a site before its key) signs nothing: its keys have no part in a rotation of its own.
      .map(({ kid, purpose, spki }) => ({
        kid,
        purpose,
        spki,
        ...(purpose === "license" && keys.signing ? { role: licenseKeyRole(kid, keys.signing.kid) } : {}),
      }));
    return {
      service: "keyturn",
      version: this.deps.version,
      variant: variant.name,
      ...(hasProducts(variant) ? { products: variant.products } : {}),
      features: {
        licensing: keys.signing !== null,
        staffSignIn: this.deps.staffSignIn,
        updates: await this.releasesReadable(),
        rateLimit: true,
        ...(this.deps.trials ? { trials: true as const } : {}),
      },
      keys: published,
      ...(this.deps.mirror ? { mirror: mirrorMeta(this.deps.mirror()) } : {}),
    };
  }

  private async releasesReadable(): Promise<boolean> {
    try {
      await access(this.deps.releasesDir, constants.R_OK | constants.X_OK);
      await readdir(this.deps.releasesDir);
      return true;
    } catch {
      return false;
    }
  }
}

function mirrorHealth({ refusing: _, ...status }: MirrorStatus): Omit<MirrorStatus, "refusing"> {
  return status;
}

function mirrorMeta({ of, lastSync }: MirrorStatus): SiteMeta["mirror"] {
  return { of, lastSync };
}
