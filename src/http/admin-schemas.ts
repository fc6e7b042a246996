import "../domain/formats";
import { Type } from "@sinclair/typebox";
import { closed, Nullable } from "../domain/admin/model";
import { Entitlement } from "./answer-schemas";

/**
 * The admin API's answers as TypeBox schemas, and its request bodies and query strings: those are
 * the domain's own input models (src/domain/admin/, src/domain/webhooks/), named here as the routes
 * and the OpenAPI document use them. Answers carry `ok: true` besides what the service returns.
 */
export const Timestamp = Type.String({ format: "date-time", description: "ISO 8601 with a numeric offset, no fraction" });
export { Nullable };
const Ok = Type.Literal(true);
const Next = Nullable(Type.String({ description: "The cursor of the next page; null on the last" }));

// ---- request bodies ----

export {
  LicenseCreateInput as AdminLicenseCreateBody,
  LicenseUpdateInput as AdminLicenseUpdateBody,
  LicenseQuery as AdminLicenseQuery,
} from "../domain/admin/licenses";
export { AdminTokenCreateInput as AdminTokenCreateBody } from "../domain/admin/tokens";
export {
  WebhookEndpointCreateInput as WebhookEndpointCreateBody,
  WebhookEndpointUpdateInput as WebhookEndpointUpdateBody,
  DeliveryQuery as WebhookDeliveryQuery,
} from "../domain/webhooks/endpoints";
export { AuditQuery as AdminAuditQuery } from "../domain/admin/audit-query";
export { FeedQuery as AdminFeedQuery } from "../domain/admin/feed";

export const IdempotencyKeyHeader = Type.String({ minLength: 1, maxLength: 255, pattern: "^[\\x21-\\x7e]+$", description: "Idempotency-Key" });

// ---- query strings ----

/** The query of an admin endpoint that takes none: any parameter is refused, as on the others. */
export const NoQuery = closed({});

export const AdminActivationQuery = closed({ license: Type.String({ minLength: 1, maxLength: 200, description: "License id or key" }) });

// ---- answers ----

export const LicenseView = Type.Object({
  id: Type.String(),
  licensee: Type.String(),
  organization: Type.String(),
  plan: Type.String(),
  planTitle: Type.String(),
  channels: Type.Array(Type.String()),
  seats: Type.Integer(),
  seatsUsed: Type.Optional(Type.Integer()),
  issued: Timestamp,
  expires: Nullable(Timestamp),
  revoked: Nullable(Timestamp),
  email: Nullable(Type.String()),
  metadata: Type.Record(Type.String(), Type.String()),
  tokenTtl: Nullable(Type.Integer({ description: "Token lifetime in seconds; null: the site's" })),
  seatLease: Nullable(Type.String({ description: "The seat lease (e.g. 30d); null when seats never lapse" })),
  updatesUntil: Nullable(Timestamp),
  features: Type.Array(Type.String({ description: "name or name=value" })),
});

export const ActivationView = Type.Object({
  id: Type.String({ pattern: "^act_" }),
  license: Type.String(),
  kind: Type.Union([Type.Literal("license"), Type.Literal("staff")]),
  product: Nullable(Type.String()),
  name: Type.String(),
  platform: Type.String(),
  version: Type.String(),
  created: Timestamp,
  lastSeen: Timestamp,
  deactivated: Nullable(Timestamp),
});

export const AdminLicenseCreated = Type.Object({
  ok: Ok,
  license: LicenseView,
  key: Type.String({ description: "Shown here only (and to a replay of the same Idempotency-Key within 24 h)" }),
});
export const AdminLicensePage = Type.Object({ ok: Ok, licenses: Type.Array(LicenseView), next: Next });
export const AdminLicenseShown = Type.Object({ ok: Ok, license: LicenseView, activations: Type.Array(ActivationView) });
export const AdminLicenseUpdated = Type.Object({ ok: Ok, license: LicenseView, changed: Type.Array(Type.String()) });
export const AdminOkAnswer = Type.Object({ ok: Ok });
export const AdminLicenseAnswer = Type.Object({ ok: Ok, license: LicenseView });
export const AdminActivationList = Type.Object({ ok: Ok, activations: Type.Array(ActivationView) });
export const AdminActivationAnswer = Type.Object({ ok: Ok, activation: ActivationView });
export const AdminOfflineActivationAnswer = Type.Object({
  ok: Ok,
  answer: Type.String({ description: "The answer code to give back to the offline computer (the entitlement token)" }),
  validUntil: Type.String({
    format: "date-time",
    description: "When the answer code stops working: --offline-token-ttl or the license's own token lifetime, never past the license's end",
  }),
  entitlement: Entitlement,
});

export const AuditLineView = Type.Object({
  ref: Type.String(),
  time: Timestamp,
  action: Type.String(),
  outcome: Type.Union([Type.Literal("ok"), Type.Literal("refused")]),
  error: Nullable(Type.String()),
  license: Nullable(Type.String()),
  activation: Nullable(Type.String()),
  address: Nullable(Type.String()),
  actor: Nullable(
    Type.String({
      description: '"tok_… (name)" for an admin token, "cli" for the command line, "autoHalt: …" (the rule and its figures) for a release halted by itself',
    }),
  ),
});
export const AdminAuditPage = Type.Object({ ok: Ok, lines: Type.Array(AuditLineView), next: Next });

const Id = Type.String({ maxLength: 300 });
const FeedCursor = Type.String({ pattern: "^[0-9a-z]{1,64}[.][0-9]+$", description: "epoch.seq: pass as after" });
const Epoch = Type.String({ pattern: "^[0-9a-z]{1,64}$", description: "The records' identity: another one after a copy or a restore" });
const FeedLicense = Type.Object({ id: Id, expires: Type.Optional(Nullable(Timestamp)) }, { additionalProperties: false });
/** Feed items carry ids, times and controls only (src/domain/admin/feed.ts). */
const FeedData = Type.Union([
  Type.Object(
    { activation: Type.Object({ id: Id, license: Id }, { additionalProperties: false }), tokensValidUntil: Timestamp },
    { additionalProperties: false },
  ),
  Type.Object(
    { license: FeedLicense, tokensValidUntil: Type.Optional(Timestamp), changed: Type.Optional(Type.Array(Type.String())) },
    { additionalProperties: false },
  ),
  Type.Object(
    { release: Type.Object({ lane: Type.String(), version: Type.String() }, { additionalProperties: false }), share: Nullable(Type.Number()) },
    { additionalProperties: false },
  ),
]);
export const FeedItem = Type.Object({
  id: Type.String({ pattern: "^evt_" }),
  seq: Type.String({ pattern: "^[0-9]+$" }),
  type: Type.String(),
  timestamp: Timestamp,
  data: FeedData,
});
const FeedSite = Type.Object(
  {
    channels: Type.Array(Type.String()),
    platforms: Type.Array(Type.String()),
    keys: Type.Array(
      Type.Object({
        kid: Type.String(),
        spki: Type.String({ description: "SubjectPublicKeyInfo (DER) in base64" }),
        role: Type.Optional(Type.Union(["signing", "next", "previous"].map((r) => Type.Literal(r)))),
      }),
      { description: "The license public keys: the one that signs, any published ahead of signing (next), older ones whose tokens may still be presented" },
    ),
  },
  { description: "The vendor's lanes and license public keys, which a mirror follows" },
);
const FeedEvents = Type.Object(
  { ok: Ok, mode: Type.Literal("events"), epoch: Epoch, events: Type.Array(FeedItem), cursor: FeedCursor, site: FeedSite },
  { description: "The events after the cursor given" },
);
const FeedSnapshot = Type.Object(
  {
    ok: Ok,
    mode: Type.Literal("snapshot"),
    epoch: Epoch,
    reason: Type.Union(
      ["start", "epoch", "ahead", "gap"].map((r) => Type.Literal(r)),
      {
        description: "start: no cursor; epoch: a cursor of other records; ahead: beyond the newest event (a backup restored); gap: events after it were pruned",
      },
    ),
    revocations: Type.Array(
      Type.Object({ kind: Type.Union([Type.Literal("activation"), Type.Literal("license")]), id: Id, tokensValidUntil: Timestamp, license: Type.Optional(Id) }),
      { description: "Deactivations whose licence is revoked are left out: the licence's revocation stands for them" },
    ),
    expiries: Type.Array(Type.Object({ license: Id, expires: Timestamp })),
    releases: Type.Array(
      Type.Object({
        lane: Type.String(),
        version: Type.String(),
        halted: Nullable(Timestamp),
        haltedMs: Type.Integer({ minimum: 0 }),
        withdrawn: Nullable(Timestamp),
        rule: Type.Optional(Type.String({ description: "Halted by the release's own rule (rollout autoHalt): the rule and its figures" })),
      }),
    ),
    next: Nullable(Type.String({ description: "Pass as snapshot for the next page; null on the last" })),
    cursor: FeedCursor,
    site: FeedSite,
  },
  { description: "What a mirror must know now, replacing what it knew; after the last page, follow the events from cursor" },
);
export const AdminFeedPage = Type.Union([FeedEvents, FeedSnapshot]);

export const AdminTokenView = Type.Object({
  id: Type.String({ pattern: "^tok_" }),
  name: Type.String(),
  scopes: Type.Array(Type.String()),
  created: Timestamp,
  expires: Nullable(Timestamp),
  revoked: Nullable(Timestamp),
  lastUsed: Nullable(Timestamp),
});
export const AdminTokenCreated = Type.Object({ ok: Ok, token: AdminTokenView, secret: Type.String({ pattern: "^kta_", description: "Shown here only" }) });
export const AdminTokenList = Type.Object({ ok: Ok, tokens: Type.Array(AdminTokenView) });

export const WebhookEndpointView = Type.Object({
  id: Type.String({ pattern: "^whe_" }),
  url: Type.String(),
  events: Type.Array(Type.String()),
  enabled: Type.Boolean(),
  disabledReason: Nullable(Type.String()),
  created: Timestamp,
});
export const WebhookEndpointCreated = Type.Object({
  ok: Ok,
  endpoint: WebhookEndpointView,
  secret: Type.String({ pattern: "^whsec_", description: "Shown here only" }),
});
export const WebhookEndpointList = Type.Object({ ok: Ok, endpoints: Type.Array(WebhookEndpointView) });
export const WebhookEndpointAnswer = Type.Object({ ok: Ok, endpoint: WebhookEndpointView });

export const DeliveryView = Type.Object({
  id: Type.String({ pattern: "^dlv_" }),
  endpoint: Type.String(),
  event: Type.String({ pattern: "^evt_", description: "The event id, sent as webhook-id" }),
  status: Type.Union([Type.Literal("pending"), Type.Literal("delivered"), Type.Literal("failed")]),
  attempts: Type.Integer(),
  nextAttempt: Nullable(Timestamp),
  lastAttempt: Nullable(Timestamp),
  created: Timestamp,
});
export const AttemptView = Type.Object({
  attempt: Type.Integer(),
  time: Timestamp,
  durationMs: Type.Integer(),
  statusCode: Nullable(Type.Integer()),
  error: Nullable(Type.String()),
});
export const WebhookDeliveryPage = Type.Object({ ok: Ok, deliveries: Type.Array(DeliveryView), next: Next });
export const WebhookDeliveryShown = Type.Object({ ok: Ok, delivery: DeliveryView, attempts: Type.Array(AttemptView) });
export const WebhookDeliveryAnswer = Type.Object({ ok: Ok, delivery: DeliveryView });

// ---- releases and stats ----

const RolloutOptions = {
  targets: Type.Optional(
    Type.Object({ licenses: Type.Array(Type.String()), plans: Type.Array(Type.String()) }, { description: "Admitted first, whatever the share" }),
  ),
  autoHalt: Type.Optional(
    Type.Object(
      { failureRate: Type.Number(), minReports: Type.Integer(), window: Type.String() },
      { description: "The failure rate of install reports, over at least minReports within window, that halts the release by itself" },
    ),
  ),
};
const RolloutView = Nullable(Type.Union([Type.Object({ percent: Type.Number(), ...RolloutOptions }), Type.Object({ days: Type.Number(), ...RolloutOptions })]));
const OutcomeCounts = {
  installed: Type.Integer(),
  failed: Type.Integer(),
  rolledBack: Type.Integer(),
};
const ControlState = { halted: Nullable(Timestamp), withdrawn: Nullable(Timestamp) };

export const AdminReleaseOverview = Type.Object({
  ok: Ok,
  lanes: Type.Array(
    Type.Object({
      lane: Type.String({ description: "product/channel/platform (gamma: channel/platform)" }),
      releases: Type.Array(
        Type.Object({
          version: Type.String(),
          released: Timestamp,
          folder: Type.String(),
          installer: Type.String(),
          size: Type.Integer(),
          sha256: Type.String(),
          rollout: RolloutView,
          share: Type.Number({ description: "Percent of installations admitted now (0 when withdrawn)" }),
          ...ControlState,
          haltRule: Nullable(
            Type.String({ description: "The rule that halted it by itself (rollout autoHalt) and its figures; null when a person halted it or it runs" }),
          ),
          feeds: Type.Array(Type.Union(["electron", "electron.blockmap", "tauri", "sparkle", "velopack"].map((f) => Type.Literal(f))), {
            description: "The feeds under /feeds that offer it: electron (electron.blockmap: differential updates), tauri, sparkle, velopack",
          }),
        }),
        { description: "Live releases, newest first, with their rollout state now" },
      ),
    }),
  ),
  otherControls: Type.Array(Type.Object({ lane: Type.String(), version: Type.String(), ...ControlState }), {
    description: "Controls of releases not (or no longer) in the tree: kept, and applied should they come back",
  }),
  skipped: Type.Array(Type.Object({ folder: Type.String(), reason: Type.String() }), { description: "Release folders not live, with why" }),
});

export const AdminReleaseControlAnswer = Type.Object({
  ok: Ok,
  changed: Type.Boolean({ description: "false when the release was already in that state" }),
  release: Type.Object({ lane: Type.String(), version: Type.String() }),
  share: Nullable(Type.Number({ description: "Percent admitted now; null when the release is not in the tree" })),
  ...ControlState,
});

export const AdminStats = Type.Object({
  ok: Ok,
  since: Timestamp,
  counted: Timestamp,
  ageSeconds: Type.Integer({
    description: "Seconds since `counted`: the figures are kept and counted again in the background, never answered more than 300 s old",
  }),
  installations: Type.Array(
    Type.Object({
      product: Nullable(Type.String()),
      lane: Nullable(Type.String()),
      channel: Nullable(Type.String()),
      version: Type.String(),
      installations: Type.Integer(),
    }),
    { description: "Active installations seen in the last 30 days by product, lane and version (lane null: no manifest read yet)" },
  ),
  rollouts: Type.Array(
    Type.Object({
      lane: Type.String(),
      version: Type.String(),
      share: Type.Number(),
      ...ControlState,
      seen: Type.Integer({ description: "Installations seen on the lane in the window" }),
      admitted: Type.Integer({ description: "Of those, how many the release admits now (its reach)" }),
    }),
  ),
  activationsPerDay: Type.Array(Type.Object({ day: Type.String(), activations: Type.Integer(), seatLimitRefusals: Type.Integer() })),
  seats: Type.Object(
    { inUse: Type.Integer(), lapsed: Type.Integer() },
    {
      description:
        "Seats held on licenses (not revoked): in use, and lapsed (leased seats not seen within their lease: the next activation on a full license takes one)",
    },
  ),
  installReports: Type.Array(
    Type.Object({
      lane: Type.String(),
      version: Type.String(),
      ...OutcomeCounts,
      days: Type.Array(Type.Object({ day: Type.String({ description: "UTC day, YYYY-MM-DD" }), ...OutcomeCounts }), {
        description: "Days with reports, oldest first",
      }),
    }),
    {
      description:
        "Install outcome reports (POST /updates/report) made in the last 30 days, per release: installations by the outcome of their latest report on it, in all and per day",
    },
  ),
  expiringLicenses: Type.Array(Type.Object({ id: Type.String(), licensee: Type.String(), organization: Type.String(), expires: Timestamp })),
});
