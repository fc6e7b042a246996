import { KeyturnError } from "../../domain/errors";
import { platformOfAgent, visitorInstallation, type PublicLanes } from "../../domain/releases/public-lanes";
import type { Release } from "../../domain/releases/release-index";
import type { ConsoleDeps, Outcome } from "../deps";
import { html } from "../html";
import { plainPage } from "../layout";

/** The installer's address on the update path (a public lane answers it without a bearer). */
const installerPath = (r: Release) =>
  `/api/v1/updates/${[r.manifest.product, r.manifest.channel, r.manifest.platform, r.manifest.installer]
    .filter((x) => x !== null)
    .map((x) => encodeURIComponent(x!))
    .join("/")}`;

/**
 * A public lane's download page: the installer for the visitor's platform (from its User-Agent)
 * first, the other platforms' listed below. A visitor is selected without a device hash, so each
 * platform offers its newest release rolled out to everyone, never one still staged.
 */
export async function downloadPage(deps: ConsoleDeps, lanes: PublicLanes, product: string | null, channel: string, agent: string): Promise<Outcome> {
  if (!lanes.has(product, channel)) throw new KeyturnError("not_found", "There is no public download here.");
  const index = await deps.releases.ready();
  const offered: Release[] = [];
  for (const platform of deps.variant.platforms) {
    const release = await deps.selection.served(index, visitorInstallation({ dev: null }), product, channel, platform);
    if (release) offered.push(release);
  }
  const mine = platformOfAgent(
    agent,
    offered.map((r) => r.manifest.platform),
  );
  const first = offered.find((r) => r.manifest.platform === mine);
  const others = offered.filter((r) => r !== first);
  const title = `Download ${product ?? deps.variant.name} (${channel})`;
  const item = (r: Release) =>
    html`<li><a href="${installerPath(r)}" download data-platform="${r.manifest.platform}">${r.manifest.installer}</a> <span class="muted">${r.manifest.platform}, version ${r.manifest.version}</span></li>`;
  const body =
    offered.length === 0
      ? html`<p>Nothing has been released here yet.</p>`
      : html`${
          first
            ? html`<p>For your computer (${first.manifest.platform}):</p><p><a class="button" id="download" href="${installerPath(first)}" download data-platform="${first.manifest.platform}">Download ${first.manifest.installer}</a> <span class="muted">version ${first.manifest.version}</span></p>`
            : ""
        }${others.length ? html`<h2>${first ? "Other platforms" : "Platforms"}</h2><ul id="platforms">${others.map(item)}</ul>` : ""}`;
  return { page: plainPage(title, body) };
}
