import { CLI_CALLER } from "../domain/admin/deps";
import { adoptStripeExampleLicences } from "../domain/commerce/adopt-stripe-example";
import { openAdmin } from "./admin-context";
import { out, printJson, UsageError } from "./io";

export const USAGE = "keyturn bridge adopt-stripe-example [--json]";

const FLAGS = { json: { type: "boolean" } } as const;

/**
 * `keyturn bridge adopt-stripe-example`: once, when moving from the Stripe example to the bridge
 * (docs/commerce.md): the example's licences become the bridge's, so their renewals, refunds and
 * quantity changes reach them. Pass the site's settings (--config), bridge-products among them.
 */
export async function bridgeCommand(args: string[], env: Record<string, string | undefined>): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== "adopt-stripe-example") throw new UsageError(USAGE, sub ? `unknown bridge command "${sub}"` : "missing bridge command");
  const ctx = await openAdmin(USAGE, rest, env, FLAGS);
  try {
    if (ctx.positionals.length > 0) throw new UsageError(USAGE, "bridge adopt-stripe-example takes no positional argument");
    const adopted = await adoptStripeExampleLicences(ctx.deps, CLI_CALLER, ctx.config.bridges.products.stripe);
    if (ctx.flags.json === true) printJson({ adopted });
    else if (adopted.length === 0) out("no licence of the Stripe example left to adopt");
    else
      for (const a of adopted)
        out(
          `${a.license}  ${a.references.join(" ")}  ${a.product === null ? "no single price of bridge-products.stripe sells its plan" : `sold as ${a.product}`}`,
        );
    return 0;
  } finally {
    await ctx.store.close();
  }
}
