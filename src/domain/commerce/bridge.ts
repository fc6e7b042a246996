import type { BridgeConfig, ProductGrant } from "../../config/bridges";
import type { BridgeEventRecord, BridgeLink, BridgeWrite, LicenseRecord } from "../../store/types";
import { actorOf, type AdminCaller, type AdminDeps } from "../admin/deps";
import { createLicense, revokeLicense, updateLicense, type LicenseCreateInput, type LicenseUpdateInput } from "../admin/licenses";
import { isoTime } from "../clock";
import { KeyturnError } from "../errors";
import { newId } from "../ids";
import { lemonSqueezyEvent } from "./lemonsqueezy-events";
import { paddleEvent } from "./paddle-events";
import type { Json } from "./payload";
import { PROVIDER_NAMES, type Provider, type SaleAction, type SaleEvent, type SaleItem } from "./sale-event";
import { verifyLemonSqueezySignature, verifyPaddleSignature, verifyStripeSignature } from "./signatures";
import { stripeEvent } from "./stripe-events";
import { SUBSCRIPTION_ENDED_MARK, SUBSCRIPTION_MARK } from "./subscription-mark";

/** The metadata that keeps when the provider made the quantity a licence's seats were last set from. */
const SEATS_CHANGED_AT = "bridge_seats_changed";

/** What the bridge answers the provider, and what the console lists. */
export interface BridgeOutcome {
  readonly event: string;
  readonly type: string;
  /** applied: a licence changed; ignored: nothing to do; replayed: this event was handled before. */
  readonly outcome: "applied" | "ignored" | "replayed";
  readonly detail: string;
  readonly license: string | null;
}

/** Provider bodies are small (an event of one object); this bounds what is read before the signature is checked. */
export const MAX_BRIDGE_BODY = 256 * 1024;

const NAME_MAX = 200;
const EMAIL_MAX = 254;

/** When a licence's product is no longer in the configuration: refunds and disputes still revoke. */
const FALLBACK: ProductGrant = {
  plan: "",
  planTitle: null,
  seats: 1,
  channels: [],
  expiresAfter: null,
  renews: ["expires"],
  graceSeconds: 3 * 24 * 3600,
  onRefund: "revoke",
  onDispute: "revoke",
  onCancel: "expire",
};

/**
 * The commerce bridges (design.md, "From sale to key"): a provider's signed webhook event becomes
 * a licence change through the product's grant in the configuration. Each event is applied once:
 * its row in bridge_events is written in the transaction of the change it makes (a replay's write
 * fails and changes nothing), or alone when it changes nothing. The provider ids an event names
 * (order, subscription, payments) are linked to the licence, so later events find it.
 */
export class CommerceBridges {
  constructor(
    private readonly d: AdminDeps,
    private readonly config: BridgeConfig,
  ) {}

  isOn(provider: Provider): boolean {
    return this.config.secrets[provider] !== undefined;
  }

  /** Checks the signature over the raw body, reads the event and applies it once. */
  async receive(provider: Provider, signature: string | null, body: Uint8Array, address: string | null): Promise<BridgeOutcome> {
    const secret = this.config.secrets[provider];
    if (secret === undefined) throw new KeyturnError("not_found", `The ${PROVIDER_NAMES[provider]} bridge is off on this site.`);
    const now = this.d.clock();
    const good =
      provider === "stripe"
        ? verifyStripeSignature(signature, body, secret, now)
        : provider === "paddle"
          ? verifyPaddleSignature(signature, body, secret, now)
          : verifyLemonSqueezySignature(signature, body, secret);
    if (!good)
      throw new KeyturnError("invalid_request", `The ${PROVIDER_NAMES[provider]} signature does not match this site's secret (or its time is too far off).`);
    const event = readEvent(provider, body);
    const known = await this.d.store.getBridgeEvent(provider, event.id);
    if (known) return this.replayed(known);
    try {
      return await this.apply(event, {
        principal: { tokenId: `bridge:${provider}`, name: `${PROVIDER_NAMES[provider]} bridge`, scopes: ["licenses:write"] },
        address,
      });
    } catch (e) {
      // The same event applied meanwhile (a retry racing the first delivery): its write failed on the event's row.
      const now = await this.d.store.getBridgeEvent(provider, event.id);
      if (now) return this.replayed(now);
      throw e;
    }
  }

  private async replayed(known: BridgeEventRecord): Promise<BridgeOutcome> {
    await this.d.store.countBridgeReplay(known.provider, known.eventId);
    return { event: known.eventId, type: known.type, outcome: "replayed", detail: `handled before: ${known.detail}`, license: known.licenseId };
  }

  private async apply(event: SaleEvent, caller: AdminCaller): Promise<BridgeOutcome> {
    const action = event.action;
    if (action === null) return this.ignore(event, caller, event.ignored ?? "nothing to do", null);
    switch (action.kind) {
      case "purchase":
        return this.purchase(event, action, caller);
      case "subscription":
        return this.subscription(event, action, caller);
      case "payment":
        return this.payment(event, action, caller);
      case "customer":
        await this.d.store.rememberBridgeCustomer(event.provider, action.customer, action.email, action.updated);
        return this.ignore(event, caller, `the e-mail of customer ${action.customer} kept for their purchases`, null);
      case "cancellation":
        return this.end(event, [action.subscription], "cancellation", caller);
      case "refund":
      case "dispute":
        return this.end(event, action.references, action.kind, caller);
    }
  }

  private async purchase(event: SaleEvent, a: Extract<SaleAction, { kind: "purchase" }>, caller: AdminCaller): Promise<BridgeOutcome> {
    const matched = this.match(event.provider, a.items);
    if (matched === null) return this.ignore(event, caller, `no product of bridge-products.${event.provider} among ${describeItems(a.items)}`, null);
    const earlier = await this.d.store.findBridgeLink(event.provider, a.references);
    if (earlier !== null)
      return this.ignore(event, caller, `the purchase already has licence ${earlier}`, earlier, this.links(event.provider, a.references, earlier));
    const { productId, grant, quantity } = matched;
    const now = this.d.clock();
    // A subscription's first paid period ends at periodEnd: that (with the grace) is the end of
    // what the plan renews. A one-off purchase, or a period not known yet, takes the plan's lengths.
    const paidUntil =
      a.subscription !== null && a.periodEnd !== null && a.periodEnd + grant.graceSeconds * 1000 > now ? a.periodEnd + grant.graceSeconds * 1000 : null;
    const windows: Pick<LicenseCreateInput, "expires" | "updatesUntil"> = {};
    if (paidUntil !== null) for (const field of grant.renews) windows[field] = isoTime(paidUntil);
    else if (grant.expiresAfter !== null) windows.expires = isoTime(now + grant.expiresAfter * 1000);
    // Paddle names the buyer by customer id: their e-mail came with the customer's own event.
    const customerEmail = a.buyer.email === null && a.buyer.customer ? await this.d.store.bridgeCustomerEmail(event.provider, a.buyer.customer) : null;
    const licensee = fit(a.buyer.name) ?? fit(a.buyer.email) ?? fit(customerEmail) ?? `${PROVIDER_NAMES[event.provider]} customer`;
    const email = usableEmail(a.buyer.email ?? customerEmail);
    const organization = fit(a.buyer.organization);
    const metadata: Record<string, string> = { bridge: event.provider, bridge_product: productId, bridge_purchase: a.references[0] ?? event.id };
    if (a.subscription !== null) metadata[SUBSCRIPTION_MARK] = a.subscription;
    const input: LicenseCreateInput = {
      licensee,
      ...(organization ? { organization } : {}),
      plan: grant.plan,
      ...(grant.planTitle ? { planTitle: grant.planTitle } : {}),
      seats: Math.min(grant.seats * quantity, 1_000_000_000),
      channels: [...grant.channels],
      ...windows,
      ...(email ? { email } : {}),
      metadata,
    };
    const detail = `licence for ${productId} × ${quantity}${email ? "" : " (no usable e-mail in the event)"}`;
    const created = await createLicense(this.d, caller, input, undefined, (l: LicenseRecord) =>
      this.write(event, "applied", detail, l.id, this.links(event.provider, a.references, l.id)),
    );
    return { event: event.id, type: event.type, outcome: "applied", detail, license: created.license.id };
  }

  private async subscription(event: SaleEvent, a: Extract<SaleAction, { kind: "subscription" }>, caller: AdminCaller): Promise<BridgeOutcome> {
    const licenseId = await this.d.store.findBridgeLink(event.provider, [a.subscription, ...a.references]);
    const license = licenseId === null ? null : await this.d.store.getLicense(licenseId);
    if (license === null) {
      // A subscription event of a product sold here can come before the purchase that makes the
      // licence (Lemon Squeezy sends subscription_created and order_created together): the
      // provider sends it again later, when the licence exists.
      if (a.items !== null && this.match(event.provider, a.items) !== null)
        throw new KeyturnError("unavailable", `No licence yet for subscription ${a.subscription}: send the event again once the purchase is in.`);
      return this.ignore(event, caller, `no licence is linked to subscription ${a.subscription} (not sold through this bridge?)`, null);
    }
    const grant = this.grantOf(event.provider, license);
    const links = this.links(event.provider, [a.subscription, ...a.payments], license.id);
    const now = this.d.clock();
    const patch: { -readonly [K in keyof LicenseUpdateInput]: LicenseUpdateInput[K] } = {};
    const said: string[] = [];
    const linking = license.metadata?.[SUBSCRIPTION_MARK] !== a.subscription;
    if (a.periodEnd !== null && grant !== FALLBACK) {
      const until = a.periodEnd + grant.graceSeconds * 1000;
      // What the plan sells is renewed: the updates window of a perpetual licence, the expiry of a
      // term licence, both for a term licence with its updates.
      for (const field of grant.renews) {
        const current = field === "updatesUntil" ? (license.updatesUntil ?? null) : license.expires;
        // The first period of a subscription bought as an order (Lemon Squeezy) sets it; later ones only extend it.
        const later = linking || (current !== null && until > current);
        if (later && until > now) {
          patch[field] = isoTime(until);
          said.push(`${field === "expires" ? "expires" : "updates until"} ${isoTime(until)}`);
        }
      }
    }
    const metadata: Record<string, string> = { ...(license.metadata ?? {}) };
    if (linking) metadata[SUBSCRIPTION_MARK] = a.subscription;
    // A new paid period of a subscription that had ended (resumed): its end moves again.
    if (patch.expires !== undefined || patch.updatesUntil !== undefined) delete metadata[SUBSCRIPTION_ENDED_MARK];
    const productId = license.metadata?.bridge_product;
    const item = a.items?.find((i) => productId !== undefined && i.ids.includes(productId));
    // The quantity the provider stated last wins, whatever order its events arrive in: each newer
    // statement is stamped, even of the same quantity (5, then 6, then 5 again, delivered 5, 6, 5
    // late, must end at 5), and one made before or in the same second as the stamp is not applied.
    const seatsAt = Date.parse(license.metadata?.[SEATS_CHANGED_AT] ?? "");
    if (item && grant !== FALLBACK) {
      const seats = Math.min(grant.seats * item.quantity, 1_000_000_000);
      const older = a.changedAt != null && !Number.isNaN(seatsAt) && a.changedAt <= seatsAt;
      if (older && seats !== license.seats)
        said.push(`seats kept at ${license.seats}: ${seats} is of ${isoTime(a.changedAt!)}, not after the quantity stated at ${isoTime(seatsAt)}`);
      if (!older && seats !== license.seats) {
        patch.seats = seats;
        said.push(`seats ${license.seats} → ${seats}`);
      }
      if (!older && a.changedAt != null && a.changedAt !== seatsAt) {
        metadata[SEATS_CHANGED_AT] = isoTime(a.changedAt);
        if (seats === license.seats) said.push(`seats stay ${seats}`);
      }
    }
    if (JSON.stringify(metadata) !== JSON.stringify(license.metadata ?? {})) patch.metadata = metadata;
    if (Object.keys(patch).length === 0)
      return this.ignore(
        event,
        caller,
        said.length > 0
          ? `licence ${license.id}: ${said.join(", ")}`
          : `licence ${license.id} already runs to ${license.expires === null ? "no end" : isoTime(license.expires)}`,
        license.id,
        links,
      );
    const detail = said.length > 0 ? `licence ${license.id}: ${said.join(", ")}` : `licence ${license.id} tied to ${a.subscription}`;
    try {
      const result = await updateLicense(this.d, caller, license.id, patch, () => this.write(event, "applied", detail, license.id, links));
      if (result.changed.length === 0) return this.ignore(event, caller, `licence ${license.id} unchanged`, license.id, links);
    } catch (e) {
      if (!(e instanceof KeyturnError && e.code === "seats_in_use")) throw e;
      // Not a fault of the provider's: answered 2xx (it would send it again for days), kept for the vendor to see.
      return this.ignore(event, caller, `licence ${license.id}: ${e.message}`, license.id, links);
    }
    return { event: event.id, type: event.type, outcome: "applied", detail, license: license.id };
  }

  /** Ties payments to the licence their invoice leads to, or, before that licence exists, to the invoice. */
  private async payment(event: SaleEvent, a: Extract<SaleAction, { kind: "payment" }>, caller: AdminCaller): Promise<BridgeOutcome> {
    const licenseId = await this.d.store.findBridgeLink(event.provider, [a.of]);
    const links: BridgeLink[] = a.payments.map((reference) => ({
      provider: event.provider,
      reference,
      licenseId,
      ...(licenseId === null ? { alias: a.of } : {}),
    }));
    const detail =
      licenseId === null
        ? `payment ${a.payments.join(", ")} of ${a.of} noted: it leads to the licence ${a.of} leads to, once there is one`
        : `payment ${a.payments.join(", ")} of ${a.of} tied to licence ${licenseId}`;
    return this.ignore(event, caller, detail, licenseId, links);
  }

  /** Cancellation, refund or dispute: what the product's grant says (revoke, or keep). */
  private async end(event: SaleEvent, references: readonly string[], kind: "cancellation" | "refund" | "dispute", caller: AdminCaller): Promise<BridgeOutcome> {
    const licenseId = await this.d.store.findBridgeLink(event.provider, references);
    const license = licenseId === null ? null : await this.d.store.getLicense(licenseId);
    if (license === null) return this.ignore(event, caller, `no licence was sold with ${references.join(", ") || "these ids"}`, null);
    const grant = this.grantOf(event.provider, license);
    const does = kind === "cancellation" ? grant.onCancel : kind === "refund" ? grant.onRefund : grant.onDispute;
    if (does === "expire" && kind === "cancellation" && license.metadata?.[SUBSCRIPTION_ENDED_MARK] === undefined) {
      // The paid end is final now: marked, so that its reminders are sent again (mail/worker.ts).
      const detail = `${kind}: licence ${license.id} runs to its paid end (${license.expires === null ? "no end" : isoTime(license.expires)})`;
      const metadata = { ...(license.metadata ?? {}), [SUBSCRIPTION_ENDED_MARK]: isoTime(this.d.clock()) };
      await updateLicense(this.d, caller, license.id, { metadata }, () => this.write(event, "applied", detail, license.id, []));
      return { event: event.id, type: event.type, outcome: "applied", detail, license: license.id };
    }
    if (does === "expire" || does === "keep") {
      const why =
        does === "expire" ? `runs to its paid end (${license.expires === null ? "no end" : isoTime(license.expires)})` : "kept, as the product's grant says";
      return this.ignore(event, caller, `${kind}: licence ${license.id} ${why}`, license.id);
    }
    if (does === "end-updates") {
      const now = this.d.clock();
      if (license.updatesUntil != null && license.updatesUntil <= now)
        return this.ignore(event, caller, `${kind}: licence ${license.id}'s updates window had ended`, license.id);
      const detail = `${kind}: licence ${license.id}'s updates window ended (it keeps the releases before ${isoTime(now)})`;
      await updateLicense(this.d, caller, license.id, { updatesUntil: isoTime(now) }, () => this.write(event, "applied", detail, license.id, []));
      return { event: event.id, type: event.type, outcome: "applied", detail, license: license.id };
    }
    if (license.revoked !== null) return this.ignore(event, caller, `${kind}: licence ${license.id} was revoked already`, license.id);
    const detail = `${kind}: licence ${license.id} revoked`;
    try {
      await revokeLicense(this.d, caller, license.id, () => this.write(event, "applied", detail, license.id, []));
    } catch (e) {
      if (e instanceof KeyturnError && e.code === "license_revoked")
        return this.ignore(event, caller, `${kind}: licence ${license.id} was revoked already`, license.id);
      throw e;
    }
    return { event: event.id, type: event.type, outcome: "applied", detail, license: license.id };
  }

  /** Records an event that changes no licence (with an audit line naming the bridge), once. */
  private async ignore(event: SaleEvent, caller: AdminCaller, detail: string, licenseId: string | null, links: BridgeLink[] = []): Promise<BridgeOutcome> {
    const recorded = await this.d.store.recordBridgeEvent(this.write(event, "ignored", detail, licenseId, links));
    if (!recorded) return this.replayed((await this.d.store.getBridgeEvent(event.provider, event.id))!);
    const now = this.d.clock();
    await this.d.store.writeAudit({
      ref: newId("ref", now),
      time: now,
      address: caller.address,
      action: "bridge-event",
      activationId: null,
      licenseId,
      outcome: "ok",
      error: null,
      actor: actorOf(caller.principal),
    });
    return { event: event.id, type: event.type, outcome: "ignored", detail, license: licenseId };
  }

  private write(event: SaleEvent, outcome: "applied" | "ignored", detail: string, licenseId: string | null, links: BridgeLink[]): BridgeWrite {
    return {
      event: { provider: event.provider, eventId: event.id, type: event.type, received: this.d.clock(), outcome, detail: detail.slice(0, 500), licenseId },
      links,
    };
  }

  private links(provider: Provider, references: readonly string[], licenseId: string): BridgeLink[] {
    return [...new Set(references)].map((reference) => ({ provider, reference, licenseId }));
  }

  /** The first item whose price/variant or product id is in the provider's mapping. */
  private match(provider: Provider, items: readonly SaleItem[]): { productId: string; grant: ProductGrant; quantity: number } | null {
    const products = this.config.products[provider];
    for (const item of items)
      for (const productId of item.ids) {
        const grant = products[productId];
        if (grant) return { productId, grant, quantity: item.quantity };
      }
    return null;
  }

  private grantOf(provider: Provider, license: LicenseRecord): ProductGrant {
    const productId = license.metadata?.bridge_product;
    return (productId !== undefined ? this.config.products[provider][productId] : undefined) ?? FALLBACK;
  }
}

function readEvent(provider: Provider, body: Uint8Array): SaleEvent {
  let payload: unknown;
  try {
    payload = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body));
  } catch {
    throw new KeyturnError("invalid_request", "The body is not JSON in UTF-8.");
  }
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) throw new KeyturnError("invalid_request", "The body is not a JSON object.");
  try {
    const json = payload as Json;
    return provider === "stripe" ? stripeEvent(json) : provider === "paddle" ? paddleEvent(json) : lemonSqueezyEvent(json, body);
  } catch (e) {
    throw new KeyturnError("invalid_request", `The body is ${(e as Error).message}.`);
  }
}

function describeItems(items: readonly SaleItem[]): string {
  const all = items.flatMap((i) => i.ids);
  return all.length === 0 ? "the event's items (none named)" : all.slice(0, 5).join(", ");
}

/** A buyer's text as a licence takes it: control characters as spaces, at most 200 characters; null when blank. */
function fit(text: string | null): string | null {
  let t = (text ?? "")
    .replace(/[\x00-\x1f\x7f]+/g, " ")
    .replace(/\s+/g, " ")
    .trim();
  if (t.length > NAME_MAX) t = t.slice(0, /[\ud800-\udbff]/.test(t[NAME_MAX - 1]!) ? NAME_MAX - 1 : NAME_MAX).trim();
  return t.length > 0 ? t : null;
}

/** The e-mail as a licence accepts it, or null (a paid order gets its licence all the same). */
function usableEmail(email: string | null): string | null {
  return email && email.length <= EMAIL_MAX && /^[^\s@\x00-\x1f\x7f]+@[^\s@\x00-\x1f\x7f]+$/.test(email) ? email : null;
}
