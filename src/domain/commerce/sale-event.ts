/**
 * One provider-neutral model of what a commerce provider's webhook event means for a licence. Each
 * provider's events are read into it (stripe-events.ts, paddle-events.ts, lemonsqueezy-events.ts);
 * bridge.ts applies it through the product's mapping (bridge-products.ts). Only the fields keyturn
 * acts on are read; everything else in the provider's payload is left alone.
 */
import { BRIDGE_PROVIDERS, type BridgeProvider } from "../../config/bridges";

export const PROVIDERS = BRIDGE_PROVIDERS;
export type Provider = BridgeProvider;

export const PROVIDER_NAMES: Readonly<Record<Provider, string>> = { stripe: "Stripe", paddle: "Paddle Billing", lemonsqueezy: "Lemon Squeezy" };

/** A line bought: its ids as the mapping may name them (price or variant first, then product), and how many. */
export interface SaleItem {
  readonly ids: readonly string[];
  readonly quantity: number;
}

export interface Buyer {
  readonly email: string | null;
  /** The provider's customer id, whose e-mail an earlier customer event may have given (Paddle). */
  readonly customer?: string | null;
  readonly name: string | null;
  readonly organization: string | null;
}

/**
 * - purchase: a paid order or the first paid period of a subscription; `references` are the
 *   provider ids that find the licence later (order, checkout, subscription, payment).
 * - subscription: a renewal (a new paid period: `periodEnd`) or a change of quantity (`items`), of
 *   the licence that `subscription` (or, for its first event, one of `references`) leads to.
 * - payment: the payments (`payments`) of an invoice (`of`) that a purchase or renewal named;
 *   they lead to its licence, even when the licence comes later.
 * - cancellation: the subscription ended (not merely "will not renew": that one runs to its end).
 * - refund, dispute: a full refund, or a chargeback, of the payment that one of `references` names.
 */
export type SaleAction =
  | {
      readonly kind: "purchase";
      readonly references: readonly string[];
      readonly subscription: string | null;
      readonly items: readonly SaleItem[];
      readonly buyer: Buyer;
      /** The end of the paid period of a subscription (ms); null for a one-off purchase. */
      readonly periodEnd: number | null;
    }
  | {
      readonly kind: "subscription";
      readonly subscription: string;
      readonly references: readonly string[];
      readonly periodEnd: number | null;
      readonly items: readonly SaleItem[] | null;
      /** Payments of the new period: a later refund of one finds the licence. */
      readonly payments: readonly string[];
      /**
       * When the provider made the state `items` describe (ms; null: it does not say). Providers do
       * not deliver events in order, and retries reorder them: a quantity older than the last one
       * applied is not applied.
       */
      readonly changedAt?: number | null;
    }
  | {
      /** A payment of an invoice (or order) paid: a later refund or dispute of it names the payment only. */
      readonly kind: "payment";
      readonly of: string;
      readonly payments: readonly string[];
    }
  | {
      /** A customer's e-mail, kept for the purchases that name the customer only. */
      readonly kind: "customer";
      readonly customer: string;
      readonly email: string;
      readonly updated: number;
    }
  | { readonly kind: "cancellation"; readonly subscription: string }
  | { readonly kind: "refund"; readonly references: readonly string[] }
  | { readonly kind: "dispute"; readonly references: readonly string[] };

export interface SaleEvent {
  readonly provider: Provider;
  /** The provider's event id (Lemon Squeezy sends none: see lemonsqueezy-events.ts). */
  readonly id: string;
  /** The provider's event type, as it names it. */
  readonly type: string;
  /** What it means; null when it means nothing for a licence (`ignored` says why). */
  readonly action: SaleAction | null;
  readonly ignored?: string;
}

/** An event that means `action` for a licence. */
export const saleEvent = (provider: Provider, id: string, type: string, action: SaleAction): SaleEvent => ({ provider, id, type, action });

export const ignoredEvent = (provider: Provider, id: string, type: string, why: string): SaleEvent => ({ provider, id, type, action: null, ignored: why });
