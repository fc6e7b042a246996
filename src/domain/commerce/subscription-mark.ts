/**
 * The metadata that marks a licence sold as a subscription through a payment bridge (bridge.ts): its
 * value is the provider's subscription id. The provider renews it and mails its own customer about
 * payments, so keyturn's reminders that a licence or its updates end are not sent for it.
 */
export const SUBSCRIPTION_MARK = "bridge_subscription";

/**
 * When that subscription ended (it was cancelled, or its payments stopped): the licence runs to its
 * paid end, which no payment moves any more, so its reminders are sent again.
 */
export const SUBSCRIPTION_ENDED_MARK = "bridge_subscription_ended";
