import { createHash } from "node:crypto";
import type { ProductGrant } from "../../config/bridges";
import type { LicenseRecord } from "../../store/types";
import { adminAudit, type AdminCaller, type AdminDeps } from "../admin/deps";
import { updateLicense } from "../admin/licenses";
import { SUBSCRIPTION_MARK } from "./subscription-mark";

/** The metadata in which the Stripe example (docs/commerce.md, "Coming from the Stripe example") kept a licence's Stripe ids. */
const EXAMPLE_IDS = ["stripe_subscription", "stripe_session", "stripe_payment_intent"] as const;

export interface AdoptedLicence {
  readonly license: string;
  /** The Stripe ids now linked to it. */
  readonly references: readonly string[];
  /** The bridge product it is now sold as, or null when no single price of bridge-products.stripe sells its plan. */
  readonly product: string | null;
}

/**
 * Licences the Stripe example made carry their Stripe ids in their metadata and no bridge links, so
 * the bridge finds none of them: their renewals are ignored (they expire while the customer pays)
 * and their refunds, chargebacks and quantity changes are lost. Adopting one links those ids to it
 * and names it the bridge's (`bridge`, `bridge_subscription`, and `bridge_product` when exactly one
 * price of bridge-products.stripe sells its plan), with a bridge event and an audit line. Run again,
 * it links only the ids not linked yet, so nothing is adopted twice.
 */
export async function adoptStripeExampleLicences(
  d: AdminDeps,
  caller: AdminCaller,
  products: Readonly<Record<string, ProductGrant>>,
): Promise<AdoptedLicence[]> {
  const adopted: AdoptedLicence[] = [];
  for (const licence of await d.store.listLicenses()) {
    const metadata = licence.metadata ?? {};
    if (metadata.bridge !== undefined && metadata.bridge !== "stripe") continue;
    // Run again (the example kept renewing until the endpoint moved): only the ids not linked yet.
    const references: string[] = [];
    for (const reference of exampleReferences(metadata)) if ((await d.store.findBridgeLink("stripe", [reference])) === null) references.push(reference);
    if (references.length === 0) continue;
    const first = metadata.bridge === undefined;
    const product = first ? productOf(licence, products) : (metadata.bridge_product ?? null);
    const now = d.clock();
    const detail = `licence ${licence.id} adopted from the Stripe example${product ? ` as ${product}` : ""}: ${references.join(" ")}`;
    const write = {
      event: {
        provider: "stripe",
        eventId: `adopt:${licence.id}:${createHash("sha256").update(references.join(" ")).digest("hex").slice(0, 16)}`,
        type: "keyturn.adopt",
        received: now,
        outcome: "applied" as const,
        detail: detail.slice(0, 500),
        licenseId: licence.id,
      },
      links: references.map((reference) => ({ provider: "stripe", reference, licenseId: licence.id })),
    };
    if (first) {
      const named = {
        ...metadata,
        bridge: "stripe",
        ...(metadata.stripe_subscription ? { [SUBSCRIPTION_MARK]: metadata.stripe_subscription } : {}),
        ...(product ? { bridge_product: product } : {}),
      };
      await updateLicense(d, caller, licence.id, { metadata: named }, () => write);
    } else {
      await d.store.recordBridgeEvent(write);
      await d.store.writeAudit(adminAudit(d, caller, "bridge-event", { licenseId: licence.id }));
    }
    adopted.push({ license: licence.id, references, product });
  }
  return adopted;
}

/** The example's ids of a licence: its subscription, session and payments (stripe_payment_intents: those of its renewals, space-separated). */
function exampleReferences(metadata: Readonly<Record<string, string>>): string[] {
  const ids = [...EXAMPLE_IDS.map((key) => metadata[key]), ...(metadata.stripe_payment_intents ?? "").split(" ")];
  return [...new Set(ids.filter((id): id is string => typeof id === "string" && id !== ""))];
}

/**
 * The price of the table the licence is sold as: the one that sells its plan, or, when several do
 * (a monthly and a yearly price), the first of them by id if they renew alike (the same windows,
 * grace and seats per unit); null when none does or they differ (its renewals are then ignored:
 * name its `bridge_product` by hand).
 */
function productOf(licence: LicenseRecord, products: Readonly<Record<string, ProductGrant>>): string | null {
  const selling = Object.entries(products)
    .filter(([, grant]) => grant.plan === licence.plan)
    .sort(([a], [b]) => (a < b ? -1 : 1));
  const alike = (g: ProductGrant) => JSON.stringify([g.renews, g.graceSeconds, g.seats]);
  if (selling.length === 0 || selling.some(([, g]) => alike(g) !== alike(selling[0]![1]))) return null;
  return selling[0]![0];
}
