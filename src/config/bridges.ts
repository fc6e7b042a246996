import { ConfigError, parseDuration } from "./parse";
import type { Plans } from "./plans";

/**
 * The commerce bridges' settings (docs/commerce.md): each provider's webhook signing secret (a
 * bridge is on when its secret is set), and what a product bought through it grants.
 *
 * `bridge-products` is a TOML table by provider and then by the provider's price, variant or
 * product id (or the same as JSON text in the flag or the environment). A product names a plan:
 * a `[plans.NAME]` of the configuration (src/config/plans.ts) gives the licence its seats (per unit
 * bought), channels, features, expiry and updates window; the product's own fields win.
 *
 *   [bridge-products.stripe."price_1PkXyz"]
 *   plan = "pro"
 *   grace = "3d"             # subscriptions: valid this long past the paid period
 *   onRefund = "revoke"      # or "end-updates", "keep"
 *   onDispute = "revoke"     # or "end-updates", "keep"
 *   onCancel = "expire"      # the subscription ended: runs to its paid end; or "revoke", "end-updates"
 *   # without a configured plan, or to differ from it:
 *   seats = 1                # per unit bought: a quantity of 5 gives 5 seats
 *   channels = ["stable"]
 *   expiresAfter = "365d"    # one-off purchases; absent: the plan's, else never
 *
 * A renewal extends what the plan sells: the updates window when the plan has `updatesFor` (a
 * perpetual licence with paid updates), else the expiry.
 */
export const BRIDGE_PROVIDERS = ["stripe", "paddle", "lemonsqueezy"] as const;
export type BridgeProvider = (typeof BRIDGE_PROVIDERS)[number];

export type EndAction = "revoke" | "end-updates" | "keep";
export type CancelAction = "expire" | "revoke" | "end-updates";
/** A licence's field a paid period moves. */
export type RenewedWindow = "updatesUntil" | "expires";

export interface ProductGrant {
  readonly plan: string;
  readonly planTitle: string | null;
  /** Seats per unit bought: the product's, else the plan's, else 1. */
  readonly seats: number;
  /** The product's, else the plan's, else every channel of the site. */
  readonly channels: readonly string[];
  /** Seconds; null: the plan's (a one-off purchase then never expires without one). */
  readonly expiresAfter: number | null;
  /**
   * What each paid period sets: the updates window when the plan has updatesFor, the expiry when
   * the product or its plan has expiresAfter or neither has updatesFor (a subscription to a plan
   * with both, such as a monthly plan with its updates, renews both).
   */
  readonly renews: readonly RenewedWindow[];
  readonly graceSeconds: number;
  readonly onRefund: EndAction;
  readonly onDispute: EndAction;
  readonly onCancel: CancelAction;
}

export interface BridgeConfig {
  /** The webhook signing secret of each provider whose bridge is on. Never logged. */
  readonly secrets: Readonly<Partial<Record<BridgeProvider, string>>>;
  /** By provider, then by price/variant/product id. */
  readonly products: Readonly<Record<BridgeProvider, Readonly<Record<string, ProductGrant>>>>;
}

const SETTING = "bridge-products";
const PRODUCTS_MAX = 1000;
const ID = /^[\x21-\x7e]{1,255}$/;
const PLAN_MAX = 64;
const NAME_MAX = 200;
const SEATS_MAX = 1_000_000_000;
const DEFAULT_GRACE = "3d";
const FIELDS = new Set(["plan", "planTitle", "seats", "channels", "expiresAfter", "grace", "onRefund", "onDispute", "onCancel"]);

export function bridgeConfig(get: (flag: string) => string | undefined, siteChannels: readonly string[], plans: Plans): BridgeConfig {
  const secrets: Partial<Record<BridgeProvider, string>> = {};
  for (const provider of BRIDGE_PROVIDERS) {
    const flag = `${provider}-webhook-secret`;
    const secret = get(flag);
    if (secret === undefined) continue;
    if (!/^[\x21-\x7e]{6,500}$/.test(secret)) throw new ConfigError(flag, "must be the provider's signing secret: 6 to 500 visible ASCII characters");
    secrets[provider] = secret;
  }
  return { secrets, products: parseProducts(get(SETTING), siteChannels, plans) };
}

function parseProducts(text: string | undefined, siteChannels: readonly string[], plans: Plans): BridgeConfig["products"] {
  const products = { stripe: {}, paddle: {}, lemonsqueezy: {} } as Record<BridgeProvider, Record<string, ProductGrant>>;
  if (text === undefined) return products;
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new ConfigError(SETTING, "must be a table by provider and product id (TOML), or the same as JSON");
  }
  const byProvider = table(doc, SETTING);
  let count = 0;
  for (const [provider, entries] of Object.entries(byProvider)) {
    if (!(BRIDGE_PROVIDERS as readonly string[]).includes(provider))
      throw new ConfigError(SETTING, `unknown provider "${provider}" (use ${BRIDGE_PROVIDERS.join(", ")})`);
    for (const [productId, entry] of Object.entries(table(entries, `${SETTING}.${provider}`))) {
      const where = `${SETTING}.${provider}.${productId}`;
      if (!ID.test(productId)) throw new ConfigError(SETTING, `${JSON.stringify(productId)} is not a provider id (visible ASCII, at most 255 characters)`);
      if (++count > PRODUCTS_MAX) throw new ConfigError(SETTING, `at most ${PRODUCTS_MAX} products`);
      products[provider as BridgeProvider][productId] = grant(table(entry, where), where, siteChannels, plans);
    }
  }
  return products;
}

function grant(e: Record<string, unknown>, where: string, siteChannels: readonly string[], plans: Plans): ProductGrant {
  const unknown = Object.keys(e).find((k) => !FIELDS.has(k));
  if (unknown !== undefined) throw new ConfigError(SETTING, `${where}: unknown field "${unknown}" (fields: ${[...FIELDS].join(", ")})`);
  const plan = e.plan;
  if (typeof plan !== "string" || plan.trim() === "" || plan.length > PLAN_MAX)
    throw new ConfigError(SETTING, `${where}: plan must be a name of 1 to ${PLAN_MAX} characters`);
  const planTitle = e.planTitle === undefined ? null : e.planTitle;
  if (planTitle !== null && (typeof planTitle !== "string" || planTitle.trim() === "" || planTitle.length > NAME_MAX))
    throw new ConfigError(SETTING, `${where}: planTitle must be 1 to ${NAME_MAX} characters`);
  const configured = plans.get(plan.trim());
  const seats = e.seats ?? configured?.seats ?? 1;
  if (typeof seats !== "number" || !Number.isSafeInteger(seats) || seats < 1 || seats > SEATS_MAX)
    throw new ConfigError(SETTING, `${where}: seats must be a whole number from 1 to ${SEATS_MAX}`);
  let channels: readonly string[] = configured?.channels ?? siteChannels;
  if (e.channels !== undefined) {
    if (!Array.isArray(e.channels) || e.channels.length === 0) throw new ConfigError(SETTING, `${where}: channels must list at least one channel`);
    channels = [...new Set(e.channels.map(String))];
    const bad = channels.find((c) => !siteChannels.includes(c));
    if (bad !== undefined) throw new ConfigError(SETTING, `${where}: "${bad}" is not one of the site's channels (${siteChannels.join(", ")})`);
  }
  const duration = (field: string, v: unknown) => {
    if (typeof v !== "string") throw new ConfigError(SETTING, `${where}: ${field} must be a duration such as "365d"`);
    return parseDuration(`${where}.${field}`, v);
  };
  const choice = <T extends string>(field: string, allowed: readonly T[], fallback: T): T => {
    const v = e[field] ?? fallback;
    if (!allowed.includes(v as T)) throw new ConfigError(SETTING, `${where}: ${field} must be ${allowed.map((a) => `"${a}"`).join(" or ")}`);
    return v as T;
  };
  const expiresAfter = e.expiresAfter === undefined ? null : duration("expiresAfter", e.expiresAfter);
  const updates = configured?.updatesFor != null;
  const expiry = expiresAfter !== null || configured?.expiresAfter != null || !updates;
  return {
    plan: plan.trim(),
    planTitle: planTitle === null ? null : (planTitle as string).trim(),
    seats,
    channels,
    expiresAfter,
    renews: [...(updates ? (["updatesUntil"] as const) : []), ...(expiry ? (["expires"] as const) : [])],
    graceSeconds: duration("grace", e.grace ?? DEFAULT_GRACE),
    onRefund: choice("onRefund", ["revoke", "end-updates", "keep"], "revoke"),
    onDispute: choice("onDispute", ["revoke", "end-updates", "keep"], "revoke"),
    onCancel: choice("onCancel", ["expire", "revoke", "end-updates"], "expire"),
  };
}

function table(v: unknown, where: string): Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new ConfigError(SETTING, `${where} must be a table`);
  return v as Record<string, unknown>;
}
