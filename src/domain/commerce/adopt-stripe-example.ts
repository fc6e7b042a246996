import type { ProductGrant } from "../../config/bridges";
import type { LicenseRecord } from "../../store/types";
import type { AdminCaller, AdminDeps } from "../admin/deps";
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
 * price of bridge-products.stripe sells its plan), with a bridge event and an audit line. Licences
 * already the bridge's are left alone, so running it twice adopts nothing twice.
 */
export async function adoptStripeExampleLicences(
  d: AdminDeps,
  caller: AdminCaller,
  products: Readonly<Record<string, ProductGrant>>,
): Promise<AdoptedLicence[]> {
  const adopted: AdoptedLicence[] = [];
  for (const licence of await d.store.listLicenses()) {
    const metadata = licence.metadata ?? {};
    if (metadata.bridge !== undefined) continue;
    const references = exampleReferences(metadata);
    if (references.length === 0) continue;
    const product = productOf(licence, products);
    const now = d.clock();
    const event = {
      provider: "stripe",
      eventId: `adopt:${licence.id}`,
      type: "keyturn.adopt",
      received: now,
      outcome: "applied" as const,
      licenseId: licence.id,
    };
    const detail = `licence ${licence.id} adopted from the Stripe example${product ? ` as ${product}` : ""}`;
    await updateLicense(
      d,
      caller,
      licence.id,
      {
        metadata: {
          ...metadata,
          bridge: "stripe",
          ...(metadata.stripe_subscription ? { [SUBSCRIPTION_MARK]: metadata.stripe_subscription } : {}),
          ...(product ? { bridge_product: product } : {}),
        },
      },
      () => ({ event: { ...event, detail }, links: references.map((reference) => ({ provider: "stripe", reference, licenseId: licence.id })) }),
    );
    adopted.push({ license: licence.id, references, product });
  }
  return adopted;
}

/** The example's ids of a licence: its subscription, session and payments (stripe_payment_intents: those of its renewals, space-separated). */
function exampleReferences(metadata: Readonly<Record<string, string>>): string[] {
  const ids = [...EXAMPLE_IDS.map((key) => metadata[key]), ...(metadata.stripe_payment_intents ?? "").split(" ")];
  return [...new Set(ids.filter((id): id is string => typeof id === "string" && id !== ""))];
}

/** The one price of the table that sells the licence's plan; null when none or several do. */
function productOf(licence: LicenseRecord, products: Readonly<Record<string, ProductGrant>>): string | null {
  const selling = Object.entries(products).filter(([, grant]) => grant.plan === licence.plan);
  return selling.length === 1 ? selling[0]![0] : null;
}
