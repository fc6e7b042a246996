import type { AppServices } from "./deps";
import type { Endpoint } from "./endpoint";
import type { OnDemandArea } from "./route-table-on-demand";
import { feedEndpoints } from "./endpoints/feeds";
import { squirrelFeedEndpoints } from "./endpoints/feeds-squirrel";
import { feedCredentialEndpoints } from "./endpoints/feed-credentials";
import { identityEndpoints } from "./endpoints/identity";
import { licensingEndpoints } from "./endpoints/licensing";
import { releasesEndpoints } from "./endpoints/releases";
import { siteEndpoints } from "./endpoints/site";
import { updateEndpoints } from "./endpoints/updates";
import { usageEndpoints } from "./endpoints/usage";
import { trialEndpoints } from "./endpoints/trials";
import { updateReportEndpoints } from "./endpoints/update-reports";

/**
 * The areas of the site: each is one Elysia plugin (app.ts), named `keyturn:<area>`, registering its
 * declarations. A new endpoint goes into its area's list; a new area is one more key, here or in
 * route-table-on-demand.ts.
 */
export type AreaName = ServedArea | OnDemandArea;

/** The areas every process serves from its start: what installed programs and load balancers call. */
export type ServedArea = "licensing" | "updates" | "releases" | "feeds" | "identity" | "site";

/** The endpoints of the areas served from the start, each declared once, by area. `openapi` gives the document made from every area. */
export function routeTable(services: AppServices, openapi: () => Promise<string>): Record<ServedArea, Endpoint[]> {
  return {
    licensing: [...licensingEndpoints(services.licensing), ...usageEndpoints(services.metering), ...trialEndpoints(services.trials)],
    updates: [
      ...updateEndpoints(services.variant, services.releases, services.selection),
      ...updateReportEndpoints(services.releases, services.installReports),
    ],
    releases: releasesEndpoints(services.variant, services.releases, services.selection),
    feeds: feedCredentialEndpoints(services.feedCredentials, services.feeds.baseUrl, [
      ...feedEndpoints(services.feeds, services.publicLanes),
      ...squirrelFeedEndpoints(services.feeds, services.publicLanes, services.feedCredentials),
    ]),
    identity: identityEndpoints(services.staffSignIn),
    site: siteEndpoints(services.site, openapi),
  };
}

/**
 * The staff's and customers' areas (the admin API, the console, the portal and a public lane's
 * download page, the payment hooks) are
 * loaded, as code and as routes, when a request under one of their paths first needs them: on a site
 * that mostly answers installed programs they are most of the program, and loading them at start
 * raised bench 4a's peak by about 5 MB (bench/README.md, "4a and 5a, fourteenth round"). Every path
 * of theirs is under one of these prefixes, and no path of the areas above is (test/http/route-table.test.ts).
 */
export const ON_DEMAND_PREFIXES = ["/api/v1/admin", "/api/v1/hooks", "/console", "/download", "/portal"] as const;

/** Whether `path` (a request's path) is one of the on-demand areas'. */
export function isOnDemandPath(path: string): boolean {
  return ON_DEMAND_PREFIXES.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
}

/** The on-demand areas' endpoints, their module evaluated on this first call. */
export async function onDemandRouteTable(services: AppServices): Promise<Record<OnDemandArea, Endpoint[]>> {
  const { onDemandAreas } = await import("./route-table-on-demand");
  return onDemandAreas(services);
}
