import { randomBytes } from "node:crypto";
import type { Variant } from "../../config/variants";
import type { ChallengeRecord, Store } from "../../store/types";
import { isoTime, type Clock } from "../clock";
import { installationOf, type Device } from "../device";
import { KeyturnError } from "../errors";
import { sha256Hex } from "../ids";

/** The spec's lifetime of a staff sign-in challenge. */
export const CHALLENGE_TTL_MS = 10 * 60_000;
/** Expired challenges are deleted at most this often, on the way through issue(). */
export const PRUNE_INTERVAL_MS = 60_000;
/** 256 random bits: well past the 128 the nonce needs to be unguessable. */
const NONCE_BYTES = 32;

export interface Challenge {
  readonly nonce: string;
  readonly expires: string;
}

/**
 * Staff sign-in challenges: a nonce issued to one installation, valid ten minutes, kept in the
 * records (hashed) so every process sharing the database can redeem it, and used at most once.
 */
export class Challenges {
  private lastPrune = -Infinity;

  constructor(
    private readonly variant: Variant,
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  async issue(device: Device): Promise<Challenge> {
    const now = this.clock();
    await this.pruneNowAndThen(now);
    const nonce = randomBytes(NONCE_BYTES).toString("base64url");
    const expires = now + CHALLENGE_TTL_MS;
    await this.store.createChallenge({
      nonceHash: sha256Hex(nonce),
      installation: installationOf(this.variant, device),
      created: now,
      expires,
      used: null,
    });
    return { nonce, expires: isoTime(expires) };
  }

  /**
   * The challenge named by an ID token's nonce, for this installation, checked without using it:
   * a token refused afterwards for a reason of its own (a stale sign-in, no second factor) leaves
   * the sign-in to be finished with a better token. A nonce presented by another installation, or
   * too late, is challenge_unknown and leaves the challenge as it was, as the spec's state table
   * has it: only a sign-in that succeeds uses a challenge (token_replayed from then on), and one
   * past its ten minutes stays challenge_unknown. Using it up on another installation's attempt
   * would protect nothing (an installation is named by what its request says) and would refuse the
   * one it was issued to "already used".
   */
  async find(nonce: unknown, device: Device, detail: { licenseId: string }): Promise<ChallengeRecord> {
    if (!isNonce(nonce)) throw unknown(detail);
    const challenge = await this.store.findChallenge(sha256Hex(nonce));
    if (challenge === null) throw unknown(detail);
    if (challenge.used !== null) throw replayed(detail);
    if (challenge.installation !== installationOf(this.variant, device) || challenge.expires <= this.clock()) throw unknown(detail);
    return challenge;
  }

  /**
   * Uses the challenge named by an ID token's nonce, for this installation. The store marks it
   * used atomically, so of two exchanges racing on one nonce exactly one gets past here.
   */
  async consume(nonce: unknown, device: Device, detail: { licenseId: string }): Promise<ChallengeRecord> {
    if (!isNonce(nonce)) throw unknown(detail);
    const now = this.clock();
    const result = await this.store.consumeChallenge(sha256Hex(nonce), now);
    if (result.outcome === "used") throw replayed(detail);
    if (result.outcome === "unknown") throw unknown(detail);
    const { challenge } = result;
    if (challenge.installation !== installationOf(this.variant, device) || challenge.expires <= now) throw unknown(detail);
    return challenge;
  }

  private async pruneNowAndThen(now: number): Promise<void> {
    if (now - this.lastPrune < PRUNE_INTERVAL_MS) return;
    this.lastPrune = now;
    await this.store.pruneChallenges(challengesPrunableBefore(now));
  }
}

/**
 * Challenges are kept a day past their expiry before they are deleted: a replayed ID token (which
 * may live an hour or more at the issuer) must keep meeting token_replayed, as the spec's state
 * table says, not challenge_unknown because its used challenge was cleaned up.
 */
export const CHALLENGE_KEPT_AFTER_EXPIRY_MS = 24 * 3600_000;

export function challengesPrunableBefore(now: number): number {
  return now - CHALLENGE_KEPT_AFTER_EXPIRY_MS;
}

function isNonce(nonce: unknown): nonce is string {
  return typeof nonce === "string" && nonce.length > 0 && nonce.length <= 512;
}

function replayed(detail: { licenseId: string }): KeyturnError {
  return new KeyturnError("token_replayed", "That sign-in was already used.", detail);
}

function unknown(detail: { licenseId: string }): KeyturnError {
  return new KeyturnError("challenge_unknown", "The sign-in was not started with this site, or took longer than ten minutes.", detail);
}
