import { readMeters, useMeter, type MeterState, type MeterUse, type UsageAnswer } from "./usage.js";
import type { Device } from "./device.js";
import { downloadInstaller, type DownloadOptions, type DownloadResult } from "./download.js";
import { KeyturnClientError } from "./errors.js";
import { installReportBody, type InstallReport } from "./install-report.js";
import { KeySet, type PublicKeys } from "./keys.js";
import { parseManifest, verifyManifestSignature, type Lane, type Release } from "./manifest.js";
import { offlineRequestCode, tokenOfAnswerCode, type OfflineRequest } from "./offline.js";
import { verifyEntitlementToken, type VerifiedToken } from "./token.js";
import { checkBaseUrl, refusal, Transport, type FetchLike } from "./transport.js";
import { clientVariant, type ClientVariant, type VariantName } from "./variants.js";
import { compareVersions } from "./versions.js";

export interface ClientOptions {
  readonly variant: VariantName;
  /** The site's base URL (https): the `iss` of its tokens. */
  readonly issuer: string;
  /** Where requests go, when not to `issuer` (a mirror, a local proxy, a test on loopback). */
  readonly baseUrl?: string;
  /** The license public keys compiled into the program, by kid (SPKI, base64). */
  readonly licenseKeys: PublicKeys;
  /** The release public keys compiled into the program, by kid (SPKI, base64). */
  readonly releaseKeys?: PublicKeys;
  /** The program's product (alpha and beta; absent in gamma), channel (default stable) and platform (default win-x64). */
  readonly product?: string;
  readonly channel?: string;
  readonly platform?: string;
  /** Clock difference tolerated when checking exp and nbf offline, in seconds (default 60). */
  readonly toleranceSec?: number;
  /** Milliseconds since the epoch (default Date.now). */
  readonly now?: () => number;
  readonly fetch?: FetchLike;
}

export interface Entitlement {
  readonly id: string;
  readonly kind: "license" | "staff";
  readonly licensee: string;
  readonly organization: string;
  readonly plan: string;
  readonly planTitle: string;
  readonly channels: readonly string[];
  readonly issued: string;
  /** When the token expires (refresh before then): at most the token lifetime after `issued`. */
  readonly expires: string;
  /** When the license itself ends (its term), null when it never does; no refresh goes past it. */
  readonly licenseExpires: string | null;
  readonly seats: { readonly used: number; readonly total: number };
  /**
   * Only on a license with a seat lease: the lease (`10m`, `30d`), in seconds, and when this seat
   * lapses unless the installation is seen again (any request with the token, or a refresh).
   */
  readonly seatLease?: { readonly lease: string; readonly seconds: number; readonly lapses: string };
  /** Only on a licence with a maintenance window: releases released after it are not offered (terms.ts). */
  readonly updatesUntil?: string;
  /** Only on a licence with features: name → value, or true for a name alone (terms.ts: hasFeature, feature). */
  readonly features?: Readonly<Record<string, string | true>>;
}

/** What activate, refresh and exchange give: the token (already verified offline) and the entitlement. */
export interface Activation {
  readonly token: string;
  readonly entitlement: Entitlement;
  readonly verified: VerifiedToken;
}

export interface Current {
  readonly entitlement: Entitlement;
  readonly activation: Readonly<Record<string, unknown>>;
}

export interface Identity {
  readonly enabled: boolean;
  readonly issuer: string | null;
  readonly clientId: string | null;
  readonly scopes?: readonly string[];
  readonly maxAge: number;
}

export interface UpdateCheck {
  /** The newest release the site serves this installation, signature and fields checked; null when none. */
  readonly release: Release | null;
  /** The release is newer than the running version. */
  readonly available: boolean;
  /** An available release the vendor marked critical. */
  readonly critical: boolean;
  /** The running version is below the release's minimumVersion: the program should not run on. */
  readonly required: boolean;
  /** The manifest's exact bytes, as signed. */
  readonly manifest: Uint8Array | null;
}

export interface VerifyOptions {
  /** This installation's device hash (see deviceHash). */
  readonly deviceHash: string;
  /** The `seen` returned by the previous verification, persisted by the program. */
  readonly lastSeen?: number;
}

const MAX_MANIFEST = 256 * 1024;

/** A feed credential (POST /feeds/credential), for updaters that cannot send the Authorization header. */
export interface FeedCredential {
  readonly credential: string;
  /** When it ends: the token's own expiry. Ask for a new one with the refreshed token. */
  readonly expires: string;
  /** The base of feed URLs that carry it (on this client's base URL): append a feed's path below /feeds. */
  readonly url: string;
}

export class KeyturnClient {
  readonly variant: ClientVariant;
  readonly issuer: string;
  private readonly transport: Transport;
  private readonly licenseKeys: KeySet;
  private readonly releaseKeys: KeySet;
  private readonly lane: Lane;
  private readonly toleranceSec: number;
  private readonly now: () => number;

  constructor(o: ClientOptions) {
    this.variant = clientVariant(o.variant);
    this.issuer = checkBaseUrl(o.issuer, "issuer", false);
    const baseUrl = o.baseUrl === undefined ? this.issuer : checkBaseUrl(o.baseUrl, "baseUrl", true);
    this.transport = new Transport(baseUrl, o.fetch ?? ((input, init) => fetch(input, init)));
    this.licenseKeys = new KeySet(o.licenseKeys);
    this.releaseKeys = new KeySet(o.releaseKeys ?? {});
    const hasProducts = this.variant.products.length > 0;
    if (hasProducts && o.product !== undefined && !this.variant.products.includes(o.product))
      throw new TypeError(`product must be one of ${this.variant.products.join(", ")}`);
    if (!hasProducts && o.product !== undefined) throw new TypeError(`${this.variant.name} has no products`);
    this.lane = { ...(o.product !== undefined ? { product: o.product } : {}), channel: o.channel ?? "stable", platform: o.platform ?? "win-x64" };
    this.toleranceSec = o.toleranceSec ?? 60;
    this.now = o.now ?? Date.now;
  }

  /** Checks a token offline against the compiled-in license keys (see verifyEntitlementToken for the order). */
  verifyToken(token: string, o: VerifyOptions): Promise<VerifiedToken> {
    return verifyEntitlementToken(token, {
      variant: this.variant,
      issuer: this.issuer,
      keys: this.licenseKeys,
      deviceHash: o.deviceHash,
      now: this.now(),
      toleranceSec: this.toleranceSec,
      ...(o.lastSeen !== undefined ? { lastSeen: o.lastSeen } : {}),
    });
  }

  /** POST /licenses/activate. */
  activate(key: string, device: Device, signal?: AbortSignal): Promise<Activation> {
    return this.activation("/licenses/activate", { key, device }, device, undefined, signal);
  }

  /**
   * When (ms since the epoch) to refresh: halfway from the token's issue to the earlier of its
   * expiry and, on a leased license, the seat's lapse. Refreshing then keeps a leased seat (a
   * floating license's) while the program runs, and the token fresh; a missed time still leaves
   * the other half before anything is lost.
   */
  refreshAt(entitlement: Pick<Entitlement, "issued" | "expires" | "seatLease">): number {
    const issued = Date.parse(entitlement.issued);
    const lapses = entitlement.seatLease ? Date.parse(entitlement.seatLease.lapses) : Infinity;
    const end = Math.min(Date.parse(entitlement.expires), lapses);
    return issued + Math.floor((end - issued) / 2);
  }

  /** Whether refreshAt has come (by the client's clock). */
  refreshDue(entitlement: Pick<Entitlement, "issued" | "expires" | "seatLease">): boolean {
    return this.now() >= this.refreshAt(entitlement);
  }

  /** POST /entitlements/refresh: a new token for the same installation. */
  refresh(token: string, device: Device, signal?: AbortSignal): Promise<Activation> {
    return this.activation("/entitlements/refresh", { device }, device, token, signal);
  }

  /** GET /entitlements/current: the entitlement as the site's records have it today. */
  current(token: string, signal?: AbortSignal): Promise<Current> {
    return this.transport.json<Current>("GET", "/entitlements/current", { token, ...(signal ? { signal } : {}) });
  }

  /**
   * POST /trials/start: this device's trial, without a key (a site that offers trials). Answers like
   * activate; a second start answers the same trial. A trial that ended: license_expired; a site
   * without trials: not_found. `email`, when the person gives one, is where the site announces
   * the trial's end (a site that sends mail).
   */
  startTrial(device: Device, options: { email?: string; signal?: AbortSignal } = {}): Promise<Activation> {
    const body = { device, ...(options.email !== undefined ? { email: options.email } : {}) };
    return this.activation("/trials/start", body, device, undefined, options.signal);
  }

  /** POST /entitlements/usage: spends from a meter of the licence (see useMeter); over its limit: usage_limit. */
  use(token: string, use: MeterUse, signal?: AbortSignal): Promise<UsageAnswer> {
    return useMeter(this.transport, token, use, signal);
  }

  /** GET /entitlements/usage: what is left of each meter of the licence, nothing spent. */
  meters(token: string, signal?: AbortSignal): Promise<Record<string, MeterState>> {
    return readMeters(this.transport, token, signal);
  }

  /** POST /entitlements/deactivate: gives the seat back; the token stops working at once. */
  async deactivate(token: string, signal?: AbortSignal): Promise<void> {
    await this.transport.json("POST", "/entitlements/deactivate", { token, ...(signal ? { signal } : {}) });
  }

  /**
   * POST /feeds/credential: a credential for this installation's feed URLs, derived from its token
   * by the site. It ends with the token and is revoked with it: ask again after each refresh.
   */
  async feedCredential(token: string, signal?: AbortSignal): Promise<FeedCredential> {
    const answer = await this.transport.json<{ credential?: unknown; expires?: unknown }>("POST", "/feeds/credential", {
      token,
      ...(signal ? { signal } : {}),
    });
    if (typeof answer.credential !== "string" || !/^[\w-]+\.[\w-]+\.[\w-]+$/.test(answer.credential) || typeof answer.expires !== "string")
      throw new KeyturnClientError("bad_answer", "The site's answer has no feed credential.");
    return { credential: answer.credential, expires: answer.expires, url: this.transport.url(`/feeds/credential/${answer.credential}`) };
  }

  /**
   * The feed URL of an updater that cannot send headers, carrying the credential: Velopack's
   * `UpdateManager` takes `feedUrl(c, "velopack")` (`…/feeds/credential/<credential>/velopack/<product>/<channel>`).
   */
  feedUrl(credential: FeedCredential, feed: string, channel: string = this.lane.channel): string {
    const product = this.variant.products.length > 0 ? this.lane.product : undefined;
    if (this.variant.products.length > 0 && product === undefined) throw new TypeError("product is required in this variant");
    return [credential.url, feed, ...(product !== undefined ? [product] : []), channel].map((s, i) => (i === 0 ? s : encodeURIComponent(s))).join("/");
  }

  /**
   * POST /updates/report: what became of installing a release on this installation (after the
   * installer ran, or after a rollback). The site counts it per release, and a rollout's autoHalt
   * halts a release whose installs fail: send one for every install, failed ones most of all.
   */
  async reportInstall(token: string, report: InstallReport, signal?: AbortSignal): Promise<{ release: { lane: string; version: string } }> {
    return this.transport.json("POST", "/updates/report", { body: installReportBody(report), token, ...(signal ? { signal } : {}) });
  }

  /** Staff sign-in, step 1: GET /auth/identity (issuer, client id, maxAge to send as max_age). */
  identity(signal?: AbortSignal): Promise<Identity> {
    return this.transport.json<Identity>("GET", "/auth/identity", signal ? { signal } : {});
  }

  /** Staff sign-in, step 2: POST /auth/identity/challenge; the nonce goes to the issuer's authorization request. */
  challenge(device: Device, signal?: AbortSignal): Promise<{ nonce: string; expires: string }> {
    return this.transport.json("POST", "/auth/identity/challenge", { body: { device }, ...(signal ? { signal } : {}) });
  }

  /** Staff sign-in, step 4: POST /auth/identity/exchange with the issuer's ID token; answers like activate. */
  exchange(idToken: string, device: Device, signal?: AbortSignal): Promise<Activation> {
    return this.activation("/auth/identity/exchange", { id_token: idToken, device }, device, undefined, signal);
  }

  private async activation(path: string, body: unknown, device: Device, token: string | undefined, signal?: AbortSignal): Promise<Activation> {
    const answer = await this.transport.json<{ token?: unknown; entitlement?: Entitlement }>("POST", path, {
      body,
      ...(token !== undefined ? { token } : {}),
      ...(signal ? { signal } : {}),
    });
    if (typeof answer.token !== "string" || typeof answer.entitlement !== "object")
      throw new KeyturnClientError("bad_answer", "The site's answer has no token.");
    const verified = await this.verifyToken(answer.token, { deviceHash: device.hash });
    return { token: answer.token, entitlement: answer.entitlement, verified };
  }

  /** The update path below /api/v1 of a file of this program's lane. */
  updatePath(file: string, lane: Lane = this.lane): string {
    const product = this.variant.products.length > 0 ? lane.product : undefined;
    if (this.variant.products.length > 0 && product === undefined) throw new TypeError("product is required in this variant");
    return ["/updates", ...(product !== undefined ? [product] : []), lane.channel, lane.platform, file]
      .map((s, i) => (i === 0 ? s : encodeURIComponent(s)))
      .join("/");
  }

  /**
   * Fetches the lane's manifest and its `.sig` with the token, checks the signature against the
   * compiled-in release keys, checks the manifest is for this lane, and compares versions.
   */
  async checkForUpdate(currentVersion: string, o: { token: string; channel?: string; signal?: AbortSignal }): Promise<UpdateCheck> {
    const lane = { ...this.lane, ...(o.channel !== undefined ? { channel: o.channel } : {}) };
    const path = this.updatePath(this.variant.manifestFile, lane);
    let manifest: Uint8Array;
    try {
      manifest = await this.fetchBytes(path, o.token, o.signal);
    } catch (e) {
      if (e instanceof KeyturnClientError && e.code === "no_release")
        return { release: null, available: false, critical: false, required: false, manifest: null };
      throw e;
    }
    const sig = await this.fetchBytes(`${path}.sig`, o.token, o.signal);
    const signedBy = await verifyManifestSignature(manifest, sig, this.variant, this.releaseKeys);
    const release = parseManifest(manifest, this.variant, lane, signedBy);
    const available = compareVersions(release.version, currentVersion) > 0;
    return {
      release,
      available,
      critical: available && release.critical,
      required: release.minimumVersion !== undefined && compareVersions(currentVersion, release.minimumVersion) < 0,
      manifest,
    };
  }

  /**
   * Downloads a release's installer to `file`, resuming `<file>.part` (see download.ts). It asks for
   * that release's version: releases may share an installer's name (AlphaSetup.exe), and the lane
   * may have moved on since the manifest was checked.
   */
  downloadInstaller(release: Release, file: string, o: DownloadOptions): Promise<DownloadResult> {
    const lane = { ...(release.product !== undefined ? { product: release.product } : {}), channel: release.channel, platform: release.platform };
    const path = `${this.updatePath(release.installer, lane)}?version=${encodeURIComponent(release.version)}`;
    return downloadInstaller(this.transport, path, release, file, o);
  }

  /** The request code of an offline activation (see offline.ts). */
  offlineRequestCode(request: OfflineRequest): string {
    return offlineRequestCode(request);
  }

  /** Accepts an offline activation's answer code: the token, verified offline for this device. */
  acceptAnswerCode(answer: string, o: VerifyOptions): Promise<VerifiedToken> {
    return this.verifyToken(tokenOfAnswerCode(answer), o);
  }

  private async fetchBytes(path: string, token: string, signal?: AbortSignal): Promise<Uint8Array> {
    const res = await this.transport.send(path, { method: "GET", token, ...(signal ? { signal } : {}) });
    if (!res.ok) throw await refusal(res);
    const bytes = new Uint8Array(await res.arrayBuffer());
    if (bytes.length > MAX_MANIFEST) throw new KeyturnClientError("bad_answer", "The manifest is too large.");
    return bytes;
  }
}
