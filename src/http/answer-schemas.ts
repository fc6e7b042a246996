import "../domain/formats";
import { Type, type TSchema } from "@sinclair/typebox";
import { ERROR_CODES } from "../domain/errors";

/**
 * The answers of every endpoint as TypeBox schemas, for the OpenAPI document: the spec's
 * resources and docs/architecture.md's decisions for what the spec leaves "not shown".
 */
const Timestamp = Type.String({ format: "date-time", description: "ISO 8601 with a numeric offset, no fraction" });
const Ok = Type.Literal(true);

export const ErrorBody = Type.Object(
  {
    ok: Type.Literal(false),
    error: Type.Union(
      ERROR_CODES.map((c) => Type.Literal(c)),
      { description: "Stable code, meant for programs" },
    ),
    message: Type.String({ description: "Text for people" }),
    ref: Type.Optional(Type.String({ description: "Reference of the line in the site's audit trail" })),
  },
  { additionalProperties: false },
);

export const Entitlement = Type.Object({
  id: Type.String({ pattern: "^act_" }),
  kind: Type.Union([Type.Literal("license"), Type.Literal("staff")]),
  licensee: Type.String(),
  organization: Type.String(),
  plan: Type.String(),
  planTitle: Type.String(),
  channels: Type.Array(Type.String()),
  issued: Timestamp,
  expires: Type.String({
    format: "date-time",
    description: "When the token expires (the spec's field): at most the token lifetime after issued, never past the license's expiry",
  }),
  licenseExpires: Type.Union([Type.String({ format: "date-time" }), Type.Null()], {
    description: "When the license itself expires (the end of its term); null when it never does. keyturn's addition to the spec's entitlement",
  }),
  seats: Type.Object({ used: Type.Integer(), total: Type.Integer() }),
  seatLease: Type.Optional(
    Type.Object(
      {
        lease: Type.String({ description: "The license's seat lease, e.g. 30d" }),
        seconds: Type.Integer(),
        lapses: Timestamp,
      },
      { description: "Only on a license with a seat lease: the seat lapses at `lapses` unless the installation is seen again (refresh before)" },
    ),
  ),
  updatesUntil: Type.Optional({
    ...Timestamp,
    description:
      "Only on a licence with a maintenance window (claim upd): releases released after it are not offered, and their installers are refused (updates_window_ended)",
  }),
  features: Type.Optional(
    Type.Record(Type.String(), Type.Union([Type.String(), Type.Literal(true)]), {
      description: "Only on a licence with features (claim ent): each name with its value, or true for a name alone",
    }),
  ),
});

export const ActivationAnswer = Type.Object({
  ok: Ok,
  token: Type.String({ description: "The entitlement token, a compact JWS (ES256)" }),
  entitlement: Entitlement,
});

export const CurrentAnswer = Type.Object({
  ok: Ok,
  entitlement: Entitlement,
  activation: Type.Object({
    id: Type.String({ pattern: "^act_" }),
    product: Type.Optional(Type.String()),
    name: Type.String(),
    platform: Type.String(),
    version: Type.String(),
    created: Timestamp,
    lastSeen: Timestamp,
  }),
});

export const OkAnswer = Type.Object({ ok: Ok });
const MirrorStatus = Type.Object(
  {
    of: Type.String({ description: "The vendor site this mirror serves" }),
    lastSync: Type.Union([Timestamp, Type.Null()], { description: "When the vendor's feed was last read successfully" }),
    staleSeconds: Type.Union([Type.Number(), Type.Null()]),
    cursor: Type.Union([Type.String(), Type.Null()], { description: "The feed cursor (epoch.seq) the mirror has applied up to" }),
    problem: Type.Union([Type.String(), Type.Null()], { description: "Why the last read of the vendor's feed was refused; null when it answered well" }),
    entries: Type.Integer({ description: "Revocations, licence expiries and release controls kept (the bound counts them)" }),
    degraded: Type.Array(Type.String(), { description: "What the mirror cannot do for its vendor's installations: key ids it cannot verify, lanes it skips" }),
  },
  { description: "Only on a mirror (--mirror-of)" },
);

export const HealthAnswer = Type.Object({
  ok: Ok,
  rateLimits: Type.Union([Type.Literal("per-process"), Type.Literal("shared"), Type.Literal("per-process (shared store unreachable)")], {
    description: "where the rate-limit counters live right now",
  }),
  licensing: Type.Union([Type.Literal("on"), Type.Literal("off"), Type.Literal("at-vendor")], {
    description:
      "on: activate, refresh and sign-in can issue tokens; off: no license key is configured (activations answer 503 licensing_unavailable); at-vendor: a mirror",
  }),
  releaseChanges: Type.Optional(Type.String({ description: "Only when the release tree cannot be watched: how it is re-scanned instead, and why" })),
  installersVerifying: Type.Optional(Type.Integer({ description: "Only while some are: installers being hashed, whose releases are not served yet" })),
  mirror: Type.Optional(MirrorStatus),
  status: Type.Union([Type.Literal("ok"), Type.Literal("degraded")], { description: "degraded: the site serves, but not all it should; degraded says what" }),
  degraded: Type.Optional(Type.Array(Type.String(), { description: "Only when status is degraded: what, each in a sentence" })),
});

export const ReleasesAnswer = Type.Object({
  ok: Ok,
  releases: Type.Array(
    Type.Object({
      product: Type.Optional(Type.String()),
      channel: Type.String(),
      platform: Type.String(),
      version: Type.String(),
      released: Timestamp,
      installer: Type.String(),
      size: Type.Integer(),
      sha256: Type.String({ pattern: "^[0-9a-f]{64}$" }),
      manifest: Type.String({ description: "The update path of this release's manifest" }),
    }),
    {
      description:
        "What this installation may install: in each lane the release it is served and every older one not withdrawn; newest first by released, then by version",
    },
  ),
  notYetAvailable: Type.Array(
    Type.Object({
      product: Type.Optional(Type.String()),
      channel: Type.String(),
      platform: Type.String(),
      version: Type.String(),
      share: Type.Number({ minimum: 0, maximum: 100, description: "Percent of installations the staged rollout admits now" }),
    }),
    { description: "Per lane, the newest release that exists but is not rolled out to this installation yet" },
  ),
});

export const IdentityAnswer = Type.Object({
  ok: Ok,
  enabled: Type.Boolean(),
  issuer: Type.Union([Type.String(), Type.Null()]),
  clientId: Type.Union([Type.String(), Type.Null()]),
  scopes: Type.Array(Type.String()),
  maxAge: Type.Union([Type.Integer(), Type.Null()], { description: "Seconds; sent to the issuer as max_age (null when sign-in is off)" }),
});

export const ChallengeAnswer = Type.Object({ ok: Ok, nonce: Type.String(), expires: Timestamp });

export const MetaAnswer = Type.Object({
  ok: Ok,
  service: Type.Literal("keyturn"),
  version: Type.String(),
  variant: Type.String(),
  products: Type.Optional(Type.Array(Type.String(), { description: "alpha and beta only" })),
  features: Type.Object({
    licensing: Type.Boolean(),
    staffSignIn: Type.Boolean(),
    updates: Type.Boolean(),
    rateLimit: Type.Boolean(),
  }),
  keys: Type.Array(
    Type.Object({
      kid: Type.String(),
      purpose: Type.Union([Type.Literal("license"), Type.Literal("release")]),
      spki: Type.String({ description: "SubjectPublicKeyInfo (DER) in base64" }),
      role: Type.Optional(
        Type.Union(
          ["signing", "next", "previous"].map((r) => Type.Literal(r)),
          {
            description:
              "License keys only: signing signs now; next is published ahead (programs and mirrors carry it before it signs); previous verifies tokens it signed",
          },
        ),
      ),
    }),
  ),
  mirror: Type.Optional(
    Type.Object(
      { of: Type.String(), lastSync: Type.Union([Timestamp, Type.Null()]) },
      { description: "Only on a mirror: whose site it mirrors, and when it last heard from it" },
    ),
  ),
});

export const OpenApiAnswer: TSchema = Type.Object({ openapi: Type.String() }, { additionalProperties: true });
