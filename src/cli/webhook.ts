import { parseList } from "../config/parse";
import { CLI_CALLER } from "../domain/admin/deps";
import { decode } from "../domain/decode";
import {
  addWebhookEndpoint,
  DeliveryQuery,
  listDeliveries,
  listWebhookEndpoints,
  removeWebhookEndpoint,
  retryDelivery,
  rotateWebhookSecret,
  type DeliveryView,
  type WebhookEndpointView,
  WebhookEndpointCreateInput,
} from "../domain/webhooks/endpoints";
import { openAdmin } from "./admin-context";
import { out, printJson, UsageError } from "./io";

export const USAGE = [
  "keyturn webhook add --url URL --events license.created,... [--json]",
  "       keyturn webhook list [--json]",
  "       keyturn webhook remove ID",
  "       keyturn webhook rotate-secret ID [--json]   # a new signing secret, shown once; the old one stops at once",
  "       keyturn webhook deliveries [--endpoint ID] [--failed] [--json]",
  "       keyturn webhook retry DELIVERY_ID",
].join("\n");

const FLAGS = {
  url: { type: "string" },
  events: { type: "string" },
  endpoint: { type: "string" },
  failed: { type: "boolean" },
  json: { type: "boolean" },
} as const;

function printEndpoint(e: WebhookEndpointView): void {
  out(`${e.id}  ${e.url}  [${e.events.join(",")}]  ${e.enabled ? "enabled" : `DISABLED (${e.disabledReason ?? ""})`}`);
}

function printDelivery(d: DeliveryView): void {
  const when = d.status === "pending" ? `next attempt ${d.nextAttempt}` : `last attempt ${d.lastAttempt}`;
  out(`${d.id}  ${d.status}  event ${d.event} to ${d.endpoint}, ${d.attempts} attempt${d.attempts === 1 ? "" : "s"}, ${when}`);
}

/** The secret of an endpoint just added or rotated: shown this once. */
function printSecret(endpoint: WebhookEndpointView, secret: string, json: boolean): void {
  if (json) printJson({ secret, ...endpoint });
  else {
    out(`secret: ${secret}`);
    out("        (shown this once: give it to the receiver to verify signatures)");
    printEndpoint(endpoint);
  }
}

/** `keyturn webhook add|list|remove|rotate-secret|deliveries|retry`. */
export async function webhookCommand(args: string[], env: Record<string, string | undefined>): Promise<number> {
  const [sub, ...rest] = args;
  if (!sub || !["add", "list", "remove", "rotate-secret", "deliveries", "retry"].includes(sub))
    throw new UsageError(USAGE, sub ? `unknown webhook command "${sub}"` : "missing webhook command");
  const ctx = await openAdmin(USAGE, rest, env, FLAGS);
  const f = ctx.flags;
  const json = f.json === true;
  try {
    if (sub === "add") {
      if (typeof f.url !== "string" || typeof f.events !== "string") throw new UsageError(USAGE, "--url and --events are required");
      const input = decode(WebhookEndpointCreateInput, { url: f.url, events: parseList(f.events) });
      const { endpoint, secret } = await addWebhookEndpoint(ctx.deps, CLI_CALLER, input);
      printSecret(endpoint, secret, json);
      return 0;
    }
    if (sub === "list") {
      const endpoints = await listWebhookEndpoints(ctx.deps, CLI_CALLER);
      if (json) printJson({ endpoints });
      else if (endpoints.length === 0) out("no webhook endpoints");
      else endpoints.forEach(printEndpoint);
      return 0;
    }
    if (sub === "deliveries") {
      const input = decode(DeliveryQuery, {
        ...(typeof f.endpoint === "string" ? { endpoint: f.endpoint } : {}),
        ...(f.failed === true ? { status: "failed" } : {}),
        limit: "200",
      });
      const { deliveries } = await listDeliveries(ctx.deps, CLI_CALLER, input);
      if (json) printJson({ deliveries });
      else if (deliveries.length === 0) out("no deliveries");
      else deliveries.forEach(printDelivery);
      return 0;
    }
    if (ctx.positionals.length !== 1) throw new UsageError(USAGE, `webhook ${sub} needs one ID`);
    const id = ctx.positionals[0];
    if (sub === "remove") {
      await removeWebhookEndpoint(ctx.deps, CLI_CALLER, id);
      out(`removed ${id}`);
    } else if (sub === "rotate-secret") {
      const { endpoint, secret } = await rotateWebhookSecret(ctx.deps, CLI_CALLER, id);
      printSecret(endpoint, secret, json);
    } else {
      const delivery = await retryDelivery(ctx.deps, CLI_CALLER, id);
      if (json) printJson(delivery);
      else printDelivery(delivery);
    }
    return 0;
  } finally {
    await ctx.store.close();
  }
}
