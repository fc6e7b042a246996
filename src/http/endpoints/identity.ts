import { ChallengeModel, ExchangeModel, type StaffSignIn } from "../../domain/identity/staff-sign-in";
import * as A from "../answer-schemas";
import { endpoint, type Endpoint } from "../endpoint";
import { json } from "../respond";
import { BODY_ERRORS, LICENSE_STATE_ERRORS, NO_STORE } from "./shared";

const SIGN_IN_ERRORS = [
  "identity_disabled",
  "challenge_unknown",
  "token_replayed",
  "token_invalid",
  "stale_authentication",
  "mfa_required",
  "not_in_required_group",
  "issuer_unavailable",
] as const;

/** GET /auth/identity, POST /auth/identity/challenge and /auth/identity/exchange. */
export function identityEndpoints(staffSignIn: StaffSignIn): Endpoint[] {
  return [
    endpoint({
      method: "GET",
      path: "/auth/identity",
      summary: "Staff sign-in information: whether it is on, issuer, client, scopes, maxAge",
      auth: "none",
      budget: "api",
      audit: "request",
      answer: A.IdentityAnswer,
      errors: [],
      handler: () => json({ ok: true, ...staffSignIn.info() }),
    }),
    endpoint({
      method: "POST",
      path: "/auth/identity/challenge",
      summary: "Start a staff sign-in: a nonce for this installation, valid ten minutes",
      auth: "none",
      budget: "signin",
      audit: "challenge",
      precondition: () => void staffSignIn.requireEnabled(),
      body: ChallengeModel,
      answer: A.ChallengeAnswer,
      errors: [...BODY_ERRORS, "identity_disabled"],
      handler: async ({ body }) => json({ ok: true, ...(await staffSignIn.challenge(body)) }, 200, NO_STORE),
    }),
    endpoint({
      method: "POST",
      path: "/auth/identity/exchange",
      summary: "Exchange the issuer's ID token (with the challenge's nonce) for a staff entitlement token",
      auth: "none",
      budget: "signin",
      audit: "sign-in",
      precondition: () => void staffSignIn.requireEnabled(),
      body: ExchangeModel,
      answer: A.ActivationAnswer,
      errors: [...BODY_ERRORS, ...SIGN_IN_ERRORS, ...LICENSE_STATE_ERRORS, "seat_limit", "licensing_unavailable"],
      handler: async ({ body, context }) => json({ ok: true, ...(await staffSignIn.exchange(body, context)) }, 200, NO_STORE),
    }),
  ];
}
