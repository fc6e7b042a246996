import type { ConsoleDeps } from "../console/deps";
import type { AppServices } from "./deps";
import type { Endpoint } from "./endpoint";
import { adminLicenseEndpoints } from "./endpoints/admin-licenses";
import { adminOfflineEndpoints } from "./endpoints/admin-offline";
import { adminPlanEndpoints } from "./endpoints/admin-plans";
import { adminRecordEndpoints } from "./endpoints/admin-records";
import { adminReleaseEndpoints } from "./endpoints/admin-releases";
import { adminReleaseWhyEndpoints } from "./endpoints/admin-release-why";
import { adminUploadEndpoints } from "./endpoints/admin-uploads";
import { adminWebhookEndpoints } from "./endpoints/admin-webhooks";
import { adminWebhookSecretEndpoints } from "./endpoints/admin-webhook-secret";
import { bridgeEventEndpoints, commerceHookEndpoints } from "./endpoints/commerce-hooks";
import { consoleEndpoints } from "./endpoints/console";
import { consoleSupportEndpoints } from "./endpoints/console-support";
import { adminConsoleSessionEndpoints, consoleSessionPages } from "./endpoints/console-sessions";
import { adminMailEndpoints } from "./endpoints/admin-mail";
import { consoleMailEndpoints } from "./endpoints/console-mail";
import { portalEndpoints } from "./endpoints/portal";
import { portalEmailEndpoints } from "./endpoints/portal-email";
import { downloadPageEndpoints } from "./endpoints/download-page";
import { feedEndpoints } from "./endpoints/feeds";
import { squirrelFeedEndpoints } from "./endpoints/feeds-squirrel";
import { feedCredentialEndpoints } from "./endpoints/feed-credentials";
import { identityEndpoints } from "./endpoints/identity";
import { licensingEndpoints } from "./endpoints/licensing";
import { releasesEndpoints } from "./endpoints/releases";
import { siteEndpoints } from "./endpoints/site";
import { updateEndpoints } from "./endpoints/updates";
import { usageEndpoints } from "./endpoints/usage";
import { adminTrialEndpoints, trialEndpoints } from "./endpoints/trials";
import { updateReportEndpoints } from "./endpoints/update-reports";

/**
 * The areas of the site: each is one Elysia plugin (app.ts), named `keyturn:<area>`, registering its
 * declarations. A new endpoint goes into its area's list; a new area is one more key.
 */
export type AreaName = "licensing" | "updates" | "releases" | "feeds" | "identity" | "site" | "admin" | "console" | "portal" | "commerce";

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
  const sales = bridgeEventEndpoints(web);
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
    admin: [
      ...adminLicenseEndpoints(services.admin),
      ...adminPlanEndpoints(services.admin),
      ...adminTrialEndpoints(services.admin),
      ...adminOfflineEndpoints(services.licensing),
      ...adminRecordEndpoints(services.admin),
      ...adminWebhookEndpoints(services.admin),
      ...adminWebhookSecretEndpoints(services.admin),
      ...adminConsoleSessionEndpoints(web),
      ...adminMailEndpoints(services.admin),
      ...adminReleaseEndpoints(services.admin, services.releases, services.selection.controls, services.clock),
      ...sales.admin,
      ...adminReleaseWhyEndpoints(services.admin, services.releases, services.selection),
      ...adminUploadEndpoints(services.admin, services.uploads),
    ],
    console: [
      ...consoleEndpoints(web, services.audit, services.consoleOpenId),
      ...consoleSupportEndpoints(web),
      ...consoleSessionPages(web),
      ...consoleMailEndpoints(web),
      ...sales.console,
    ],
    portal: [
      ...portalEndpoints(web, services.audit),
      ...downloadPageEndpoints(web, services.publicLanes),
      ...(services.admin.mail ? portalEmailEndpoints(web, services.audit, services.log) : []),
    ],
    commerce: commerceHookEndpoints(services.bridges),
  };
}
