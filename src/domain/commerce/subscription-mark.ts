/**
 * The metadata that marks a licence sold as a subscription through a payment bridge (bridge.ts): its
 * value is the provider's subscription id. The provider renews it and mails its own customer about
 * payments, so keyturn's reminders that a licence or its updates end are not sent for it.
 */
export const SUBSCRIPTION_MARK = "bridge_subscription";
