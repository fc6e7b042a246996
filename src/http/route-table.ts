import type { ConsoleDeps } from "../console/deps";
import type { AppServices } from "./deps";
import type { Endpoint } from "./endpoint";
import { adminLicenseEndpoints } from "./endpoints/admin-licenses";
import { adminOfflineEndpoints } from "./endpoints/admin-offline";
import { adminPlanEndpoints } from "./endpoints/admin-plans";
import { adminRecordEndpoints } from "./endpoints/admin-records";
import { adminReleaseEndpoints } from "./endpoints/admin-releases";
import { adminReleaseWhyEndpoints } from "./endpoints/admin-release-why";
import { adminWebhookEndpoints } from "./endpoints/admin-webhooks";
import { adminWebhookSecretEndpoints } from "./endpoints/admin-webhook-secret";
import { consoleEndpoints } from "./endpoints/console";
import { consoleSupportEndpoints } from "./endpoints/console-support";
import { adminConsoleSessionEndpoints, consoleSessionPages } from "./endpoints/console-sessions";
import { portalEndpoints } from "./endpoints/portal";
import { feedEndpoints } from "./endpoints/feeds";
import { identityEndpoints } from "./endpoints/identity";
import { licensingEndpoints } from "./endpoints/licensing";
import { releasesEndpoints } from "./endpoints/releases";
import { siteEndpoints } from "./endpoints/site";
import { updateEndpoints } from "./endpoints/updates";
import { updateReportEndpoints } from "./endpoints/update-reports";

/**
 * The areas of the site: each is one Elysia plugin (app.ts), named `keyturn:<area>`, registering its
 * declarations. A new endpoint goes into its area's list; a new area is one more key.
 */
export type AreaName = "licensing" | "updates" | "releases" | "feeds" | "identity" | "site" | "admin" | "console" | "portal";

/** Every endpoint of the API, the console and the portal, each declared once, by area. `openapi` gives the document made from this table. */
export function routeTable(services: AppServices, openapi: () => string): Record<AreaName, Endpoint[]> {
  const web: ConsoleDeps = {
    variant: services.variant,
    admin: services.admin,
    sessions: services.consoleSessions,
    licensing: services.licensing,
    releases: services.releases,
    controls: services.selection.controls,
    selection: services.selection,
    clock: services.clock,
    site: services.origin,
  };
  return {
    licensing: licensingEndpoints(services.licensing),
    updates: [
      ...updateEndpoints(services.variant, services.releases, services.selection),
      ...updateReportEndpoints(services.releases, services.installReports),
    ],
    releases: releasesEndpoints(services.variant, services.releases, services.selection),
    feeds: feedEndpoints(services.feeds),
    identity: identityEndpoints(services.staffSignIn),
    site: siteEndpoints(services.site, openapi),
    admin: [
      ...adminLicenseEndpoints(services.admin),
      ...adminPlanEndpoints(services.admin),
      ...adminOfflineEndpoints(services.licensing),
      ...adminRecordEndpoints(services.admin),
      ...adminWebhookEndpoints(services.admin),
      ...adminWebhookSecretEndpoints(services.admin),
      ...adminConsoleSessionEndpoints(web),
      ...adminReleaseEndpoints(services.admin, services.releases, services.selection.controls, services.clock),
      ...adminReleaseWhyEndpoints(services.admin, services.releases, services.selection),
    ],
    console: [...consoleEndpoints(web, services.audit, services.consoleOpenId), ...consoleSupportEndpoints(web), ...consoleSessionPages(web)],
    portal: portalEndpoints(web, services.audit),
  };
}
