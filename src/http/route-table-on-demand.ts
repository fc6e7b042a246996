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
import { adminTrialEndpoints } from "./endpoints/trials";

/** The areas loaded when first asked for (route-table.ts, ON_DEMAND_PREFIXES). */
export type OnDemandArea = "admin" | "console" | "portal" | "commerce";

/** The endpoints of the admin API, the console, the portal and the payment hooks, each declared once, by area. */
export function onDemandAreas(services: AppServices): Record<OnDemandArea, Endpoint[]> {
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
