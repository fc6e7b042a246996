import type { TSchema } from "@sinclair/typebox";
import { CHANNELS, hasProducts, PLATFORMS, type Variant } from "../config/variants";
import type { ErrorCode } from "../domain/errors";
import * as A from "./answer-schemas";
import { ActivateBody, ChallengeBody, ExchangeBody, RefreshBody } from "./schemas";

export interface PathParam {
  readonly name: string;
  readonly description: string;
  readonly values?: readonly string[];
}

/** A special answer of a route beyond its 200 JSON (files, 206, 304, 416). */
export interface ExtraAnswer {
  readonly description: string;
  readonly content?: Record<string, { schema: Record<string, unknown> }>;
  readonly headers?: readonly string[];
}

/** One endpoint, as the OpenAPI document and its completeness test see it. */
export interface RouteDoc {
  readonly method: "GET" | "HEAD" | "POST";
  /** Below /api/v1, with `{param}` segments. */
  readonly path: string;
  readonly summary: string;
  readonly bearer: boolean;
  readonly params?: readonly PathParam[];
  readonly query?: readonly PathParam[];
  readonly body?: TSchema;
  /** The 200 JSON answer; routes that serve files use `answers` instead. */
  readonly answer?: TSchema;
  readonly answers?: Readonly<Record<string, ExtraAnswer>>;
  /** Refusals beyond those every route can give (rate_limited, internal_error). */
  readonly errors: readonly ErrorCode[];
}

const BODY_ERRORS: readonly ErrorCode[] = ["invalid_request", "unsupported_media_type", "payload_too_large"];
const BEARER_ERRORS: readonly ErrorCode[] = ["entitlement_invalid", "entitlement_expired", "entitlement_revoked"];
const LICENSE_STATE_ERRORS: readonly ErrorCode[] = ["license_revoked", "license_expired"];
const SIGN_IN_ERRORS: readonly ErrorCode[] = [
  "identity_disabled",
  "challenge_unknown",
  "token_replayed",
  "token_invalid",
  "stale_authentication",
  "mfa_required",
  "not_in_required_group",
  "issuer_unavailable",
];

const FILE_HEADERS = ["ETag", "Cache-Control"];

/** Every endpoint of the spec (and docs/architecture.md's additions) for one variant. */
export function apiRoutes(variant: Variant): RouteDoc[] {
  const products = hasProducts(variant);
  const updateParams: PathParam[] = [
    ...(products ? [{ name: "product", description: "A product of this variant", values: variant.products }] : []),
    { name: "channel", description: "Update channel", values: CHANNELS },
    { name: "platform", description: "Platform of the installation", values: PLATFORMS },
    {
      name: "file",
      description: `${variant.manifestFile} (the manifest), ${variant.manifestFile}.sig (its detached JWS), or the installer file name a live release's manifest names`,
    },
  ];
  const updatePath = `/updates/${products ? "{product}/" : ""}{channel}/{platform}/{file}`;
  const updateAnswers: Record<string, ExtraAnswer> = {
    "200": {
      description: "The manifest or its signature, byte for byte as signed; or the whole installer",
      content: {
        "application/json": { schema: { description: "The signed manifest" } },
        "application/jose": { schema: { type: "string", description: "Detached compact JWS over the manifest's bytes" } },
        "application/octet-stream": { schema: { type: "string", format: "binary" } },
      },
      headers: [...FILE_HEADERS, "Accept-Ranges", "Content-Length"],
    },
    "206": {
      description: "One byte range of the installer (Range: bytes=a-b, a-, -n; If-Range honoured)",
      content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } },
      headers: ["Content-Range", "ETag", "Accept-Ranges"],
    },
    "304": { description: "If-None-Match matched the ETag", headers: ["ETag"] },
    "416": { description: "The range lies outside the installer (Content-Range: bytes */length)", headers: ["Content-Range"] },
  };
  const updateErrors: ErrorCode[] = [...BEARER_ERRORS, ...LICENSE_STATE_ERRORS, "channel_not_allowed", "no_release", "not_found"];

  return [
    {
      method: "POST",
      path: "/licenses/activate",
      summary: "Exchange a license key and a device for an entitlement token (takes or reuses a seat)",
      bearer: false,
      body: ActivateBody,
      answer: A.ActivationAnswer,
      errors: [...BODY_ERRORS, "license_unknown", ...LICENSE_STATE_ERRORS, "seat_limit", "licensing_unavailable"],
    },
    {
      method: "GET",
      path: "/entitlements/current",
      summary: "The entitlement as it is today in the site's records",
      bearer: true,
      answer: A.CurrentAnswer,
      errors: [...BEARER_ERRORS, ...LICENSE_STATE_ERRORS],
    },
    {
      method: "POST",
      path: "/entitlements/refresh",
      summary: "A new token for the bearer's activation",
      bearer: true,
      body: RefreshBody,
      answer: A.ActivationAnswer,
      errors: [...BEARER_ERRORS, ...BODY_ERRORS, ...LICENSE_STATE_ERRORS, "device_mismatch", "licensing_unavailable"],
    },
    {
      method: "POST",
      path: "/entitlements/deactivate",
      summary: "Give the seat back; every token of the activation stops working at once",
      bearer: true,
      answer: A.OkAnswer,
      errors: [...BEARER_ERRORS],
    },
    {
      method: "GET",
      path: updatePath,
      summary: "The newest live release's manifest, its signature, or an installer of a live release",
      bearer: true,
      params: updateParams,
      answers: updateAnswers,
      errors: updateErrors,
    },
    {
      method: "HEAD",
      path: updatePath,
      summary: "The headers of the same GET, without the body",
      bearer: true,
      params: updateParams,
      answers: updateAnswers,
      errors: updateErrors,
    },
    {
      method: "GET",
      path: "/releases",
      summary: "Every live release the entitlement includes, newest first",
      bearer: true,
      ...(products
        ? { query: [{ name: "product", description: "Only this product's releases", values: variant.products }] }
        : {}),
      answer: A.ReleasesAnswer,
      errors: [...BEARER_ERRORS, ...LICENSE_STATE_ERRORS, "invalid_request"],
    },
    {
      method: "GET",
      path: "/auth/identity",
      summary: "Staff sign-in information: whether it is on, issuer, client, scopes, maxAge",
      bearer: false,
      answer: A.IdentityAnswer,
      errors: [],
    },
    {
      method: "POST",
      path: "/auth/identity/challenge",
      summary: "Start a staff sign-in: a nonce for this installation, valid ten minutes",
      bearer: false,
      body: ChallengeBody,
      answer: A.ChallengeAnswer,
      errors: [...BODY_ERRORS, "identity_disabled"],
    },
    {
      method: "POST",
      path: "/auth/identity/exchange",
      summary: "Exchange the issuer's ID token (with the challenge's nonce) for a staff entitlement token",
      bearer: false,
      body: ExchangeBody,
      answer: A.ActivationAnswer,
      errors: [...BODY_ERRORS, ...SIGN_IN_ERRORS, "seat_limit", "licensing_unavailable"],
    },
    {
      method: "GET",
      path: "/health",
      summary: "ok when the records answer, the first release index is built and the release tree is readable",
      bearer: false,
      answer: A.HealthAnswer,
      errors: ["unavailable"],
    },
    {
      method: "GET",
      path: "/meta",
      summary: "Service, version, variant, products, features switched on and the public keys",
      bearer: false,
      answer: A.MetaAnswer,
      errors: [],
    },
    {
      method: "GET",
      path: "/openapi.json",
      summary: "This document",
      bearer: false,
      answer: A.OpenApiAnswer,
      errors: [],
    },
  ];
}
