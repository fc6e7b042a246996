import { adminTokensPage, createTokenAction, revokeTokenAction, revokeTokenConfirmPage } from "../../console/pages/admin-tokens";
import type { ConsoleDeps } from "../../console/deps";
import { deactivateConfirmPage, revokeConfirmPage, tokenLifetimeAction } from "../../console/pages/licenses";
import { offlineAction, offlinePage } from "../../console/pages/offline";
import { rekeyAction, rekeyConfirmPage } from "../../console/pages/rekey";
import { CONFIRMED_RELEASE_OPS, releaseConfirmPage } from "../../console/pages/releases";
import { addEndpointAction, removeEndpointAction, removeEndpointConfirmPage, rotateSecretAction, rotateSecretConfirmPage } from "../../console/pages/webhooks";
import type { ReleaseControlOp } from "../../store/types";
import type { Endpoint } from "../endpoint";
import { consolePage } from "./console";

/**
 * Support without a shell: offline answers, a licence's token lifetime,
 * a reissued key, admin tokens, webhook endpoints, and the confirmation pages of destructive
 * actions (a GET of the action's address; its POST acts, as declared here or in console.ts).
 * Each calls the admin API's domain function with its scope and audit line, the session as actor.
 */
export function consoleSupportEndpoints(deps: ConsoleDeps): Endpoint[] {
  const page = consolePage;
  const confirmedOps = Object.keys(CONFIRMED_RELEASE_OPS) as ReleaseControlOp[];
  return [
    page("GET", "/console/offline", "Offline activation: the form for a request code", "activate", (p) =>
      offlinePage(p.session, p.address, new URLSearchParams(p.call.query)),
    ),
    page("POST", "/console/offline", "Turn an offline computer's request code into its answer code", "activate", (p) =>
      offlineAction(deps, p.session, p.address, p.form),
    ),
    page("POST", "/console/licenses/{id}/token-ttl", "Set or clear a licence's own token lifetime", "license-update", (p) =>
      tokenLifetimeAction(deps, p.session, p.address, p.params.id, p.form),
    ),
    page("GET", "/console/licenses/{id}/rekey", "Confirm reissuing a licence's key", "license-rekey", (p) =>
      rekeyConfirmPage(deps, p.session, p.address, p.params.id),
    ),
    page("POST", "/console/licenses/{id}/rekey", "Reissue a licence's key; the new key is shown once", "license-rekey", (p) =>
      rekeyAction(deps, p.session, p.address, p.params.id),
    ),
    page("GET", "/console/licenses/{id}/revoke", "Confirm revoking a licence", "license-revoke", (p) =>
      revokeConfirmPage(deps, p.session, p.address, p.params.id),
    ),
    page("GET", "/console/activations/{id}/deactivate", "Confirm deactivating an installation", "activation-deactivate", (p) =>
      deactivateConfirmPage(deps, p.session, p.address, p.params.id),
    ),
    ...confirmedOps.map((op) =>
      page("GET", `/console/releases/{lane}/{version}/${op}`, `Confirm: ${op} a release`, `release-${op}`, (p) =>
        releaseConfirmPage(p.session, p.address, p.params.lane, p.params.version, op),
      ),
    ),
    page("GET", "/console/tokens", "Admin tokens: list, create, revoke", "request", (p) =>
      adminTokensPage(deps, p.session, p.address, new URLSearchParams(p.call.query)),
    ),
    page("POST", "/console/tokens", "Create an admin token; its secret is shown once", "admin-token-create", (p) =>
      createTokenAction(deps, p.session, p.address, p.form),
    ),
    page("GET", "/console/tokens/{id}/revoke", "Confirm revoking an admin token", "admin-token-revoke", (p) =>
      revokeTokenConfirmPage(deps, p.session, p.address, p.params.id),
    ),
    page("POST", "/console/tokens/{id}/revoke", "Revoke an admin token", "admin-token-revoke", (p) =>
      revokeTokenAction(deps, p.session, p.address, p.params.id),
    ),
    page("POST", "/console/webhooks", "Add a webhook endpoint; its secret is shown once", "webhook-add", (p) =>
      addEndpointAction(deps, p.session, p.address, p.form),
    ),
    page("GET", "/console/webhooks/{id}/remove", "Confirm removing a webhook endpoint", "webhook-remove", (p) =>
      removeEndpointConfirmPage(deps, p.session, p.address, p.params.id),
    ),
    page("POST", "/console/webhooks/{id}/remove", "Remove a webhook endpoint", "webhook-remove", (p) =>
      removeEndpointAction(deps, p.session, p.address, p.params.id),
    ),
    page("GET", "/console/webhooks/{id}/rotate-secret", "Confirm rotating a webhook endpoint's secret", "webhook-rotate-secret", (p) =>
      rotateSecretConfirmPage(deps, p.session, p.address, p.params.id),
    ),
    page("POST", "/console/webhooks/{id}/rotate-secret", "Give a webhook endpoint a new secret, shown once", "webhook-rotate-secret", (p) =>
      rotateSecretAction(deps, p.session, p.address, p.params.id),
    ),
  ];
}
