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
export function routeTable(s: AppServices, openapi: () => string): Endpoint[] {
  const web: ConsoleDeps = {
    variant: s.variant,
    admin: s.admin,
    sessions: s.consoleSessions,
    licensing: s.licensing,
    releases: s.releases,
    controls: s.selection.controls,
    selection: s.selection,
    clock: s.clock,
  };
  return [
    ...licensingEndpoints(s.licensing),
    ...updateEndpoints(s.variant, s.releases, s.selection),
    ...releasesEndpoints(s.variant, s.releases, s.selection),
    ...feedEndpoints(s.feeds),
    ...identityEndpoints(s.staffSignIn),
    ...siteEndpoints(s.site, openapi),
    ...adminLicenseEndpoints(s.admin),
    ...adminOfflineEndpoints(s.licensing),
    ...adminRecordEndpoints(s.admin),
    ...adminWebhookEndpoints(s.admin),
    ...adminReleaseEndpoints(s.admin, s.releases, s.selection.controls, s.clock),
    ...consoleEndpoints(web, s.audit, s.consoleOpenId),
    ...portalEndpoints(web, s.audit),
  ];
}
