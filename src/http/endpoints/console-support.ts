import { adminTokensPage, createTokenAction, revokeTokenAction, revokeTokenConfirmPage } from "../../console/pages/admin-tokens";
import type { ConsoleDeps } from "../../console/deps";
import { deactivateConfirmPage, revokeConfirmPage, tokenLifetimeAction } from "../../console/pages/licenses";
import { offlineAction, offlinePage } from "../../console/pages/offline";
import { rekeyAction, rekeyConfirmPage } from "../../console/pages/rekey";
import { CONFIRMED_RELEASE_OPS, releaseConfirmPage } from "../../console/pages/releases";
import { addEndpointAction, removeEndpointAction, removeEndpointConfirmPage, rotateSecretAction, rotateSecretConfirmPage } from "../../console/pages/webhooks";
import type { Audit } from "../../domain/audit";
import type { ConsoleOpenId } from "../../domain/identity/console-sign-in";
import type { ReleaseControlOp } from "../../store/types";
import type { Endpoint } from "../endpoint";
import { queryParams } from "../web";
import { consolePageEndpoint } from "./console";

/**
 * Support without a shell (issue 33 items 3 and 7): offline answers, a licence's token lifetime,
 * a reissued key, admin tokens, webhook endpoints, and the confirmation pages of destructive
 * actions (a GET of the action's address; its POST acts, as declared here or in console.ts).
 * Each calls the admin API's domain function with its scope and audit line, the session as actor.
 */
export function consoleSupportEndpoints(d: ConsoleDeps, audit: Audit, openId: ConsoleOpenId | null): Endpoint[] {
  const web = consolePageEndpoint(d, audit, openId);
  const confirmedOps = Object.keys(CONFIRMED_RELEASE_OPS) as ReleaseControlOp[];
  return [
    web("GET", "/console/offline", "Offline activation: the form for a request code", "activate", (p) => offlinePage(p.session, p.address, queryParams(p.call.query))),
    web("POST", "/console/offline", "Turn an offline computer's request code into its answer code", "activate", (p) => offlineAction(d, p.session, p.address, p.form)),
    web("POST", "/console/licenses/{id}/token-ttl", "Set or clear a licence's own token lifetime", "license-update", (p) => tokenLifetimeAction(d, p.session, p.address, p.param("id"), p.form)),
    web("GET", "/console/licenses/{id}/rekey", "Confirm reissuing a licence's key", "license-rekey", (p) => rekeyConfirmPage(d, p.session, p.address, p.param("id"))),
    web("POST", "/console/licenses/{id}/rekey", "Reissue a licence's key; the new key is shown once", "license-rekey", (p) => rekeyAction(d, p.session, p.address, p.param("id"))),
    web("GET", "/console/licenses/{id}/revoke", "Confirm revoking a licence", "license-revoke", (p) => revokeConfirmPage(d, p.session, p.address, p.param("id"))),
    web("GET", "/console/activations/{id}/deactivate", "Confirm deactivating an installation", "activation-deactivate", (p) => deactivateConfirmPage(d, p.session, p.address, p.param("id"))),
    ...confirmedOps.map((op) =>
      web("GET", `/console/releases/{lane}/{version}/${op}`, `Confirm: ${op} a release`, `release-${op}`, (p) => releaseConfirmPage(p.session, p.address, p.param("lane"), p.param("version"), op)),
    ),
    web("GET", "/console/tokens", "Admin tokens: list, create, revoke", "request", (p) => adminTokensPage(d, p.session, p.address, queryParams(p.call.query))),
    web("POST", "/console/tokens", "Create an admin token; its secret is shown once", "admin-token-create", (p) => createTokenAction(d, p.session, p.address, p.form)),
    web("GET", "/console/tokens/{id}/revoke", "Confirm revoking an admin token", "admin-token-revoke", (p) => revokeTokenConfirmPage(d, p.session, p.address, p.param("id"))),
    web("POST", "/console/tokens/{id}/revoke", "Revoke an admin token", "admin-token-revoke", (p) => revokeTokenAction(d, p.session, p.address, p.param("id"))),
    web("POST", "/console/webhooks", "Add a webhook endpoint; its secret is shown once", "webhook-add", (p) => addEndpointAction(d, p.session, p.address, p.form)),
    web("GET", "/console/webhooks/{id}/remove", "Confirm removing a webhook endpoint", "webhook-remove", (p) => removeEndpointConfirmPage(d, p.session, p.address, p.param("id"))),
    web("POST", "/console/webhooks/{id}/remove", "Remove a webhook endpoint", "webhook-remove", (p) => removeEndpointAction(d, p.session, p.address, p.param("id"))),
    web("GET", "/console/webhooks/{id}/rotate-secret", "Confirm rotating a webhook endpoint's secret", "webhook-rotate-secret", (p) => rotateSecretConfirmPage(d, p.session, p.address, p.param("id"))),
    web("POST", "/console/webhooks/{id}/rotate-secret", "Give a webhook endpoint a new secret, shown once", "webhook-rotate-secret", (p) => rotateSecretAction(d, p.session, p.address, p.param("id"))),
  ];
}
