import type { ConsoleDeps } from "../console/deps";
import type { AppServices } from "./deps";
import type { Endpoint } from "./endpoint";
import { adminLicenseEndpoints } from "./endpoints/admin-licenses";
import { adminOfflineEndpoints } from "./endpoints/admin-offline";
import { adminRecordEndpoints } from "./endpoints/admin-records";
import { adminReleaseEndpoints } from "./endpoints/admin-releases";
import { adminWebhookEndpoints } from "./endpoints/admin-webhooks";
import { consoleEndpoints } from "./endpoints/console";
import { portalEndpoints } from "./endpoints/portal";
import { feedEndpoints } from "./endpoints/feeds";
import { identityEndpoints } from "./endpoints/identity";
import { licensingEndpoints } from "./endpoints/licensing";
import { releasesEndpoints } from "./endpoints/releases";
import { siteEndpoints } from "./endpoints/site";
import { updateEndpoints } from "./endpoints/updates";

/** Every endpoint of the API, the console and the portal, each declared once. `openapi` gives the document made from this table. */
export function routeTable(services: AppServices, openapi: () => string): Endpoint[] {
  const web: ConsoleDeps = {
    variant: services.variant,
    admin: services.admin,
    sessions: services.consoleSessions,
    licensing: services.licensing,
    releases: services.releases,
    controls: services.selection.controls,
    selection: services.selection,
    clock: services.clock,
  };
  return [
    ...licensingEndpoints(services.licensing),
    ...updateEndpoints(services.variant, services.releases, services.selection),
    ...releasesEndpoints(services.variant, services.releases, services.selection),
    ...feedEndpoints(services.feeds),
    ...identityEndpoints(services.staffSignIn),
    ...siteEndpoints(services.site, openapi),
    ...adminLicenseEndpoints(services.admin),
    ...adminOfflineEndpoints(services.licensing),
    ...adminRecordEndpoints(services.admin),
    ...adminWebhookEndpoints(services.admin),
    ...adminReleaseEndpoints(services.admin, services.releases, services.selection.controls, services.clock),
    ...consoleEndpoints(web, services.audit, services.consoleOpenId),
    ...portalEndpoints(web, services.audit),
  ];
}
