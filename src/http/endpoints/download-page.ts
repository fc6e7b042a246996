import { downloadPage } from "../../console/pages/download";
import type { ConsoleDeps } from "../../console/deps";
import type { PublicLanes } from "../../domain/releases/public-lanes";
import { endpoint, type Endpoint } from "../endpoint";
import { webAnswer } from "../web";

/** GET /download/{product}/{channel} (gamma: /download/{channel}): a public lane's download page, no sign-in. */
export function downloadPageEndpoints(deps: ConsoleDeps, lanes: PublicLanes): Endpoint[] {
  if (!lanes.any) return [];
  const v = deps.variant;
  const withProduct = v.products.length > 0;
  return [
    endpoint({
      method: "GET",
      path: `/download/${withProduct ? "{product}/" : ""}{channel}`,
      prefix: "",
      summary: "A public lane's download page: the installer for the visitor's platform (from the User-Agent) and the others listed",
      auth: "none",
      page: { back: "/" },
      budget: "api",
      audit: "request",
      params: [
        ...(withProduct ? [{ name: "product", description: "A product of this variant", values: v.products }] : []),
        { name: "channel", description: "A public channel", values: v.channels },
      ],
      errors: ["not_found"],
      handler: async ({ request, params: p }) =>
        webAnswer(await downloadPage(deps, lanes, withProduct ? (p.product ?? "") : null, p.channel ?? "", request.headers.get("user-agent") ?? "")),
    }),
  ];
}
