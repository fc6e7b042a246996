import { Type } from "@sinclair/typebox";
import type { AdminDeps } from "../../domain/admin/deps";
import { auditRead } from "../../domain/admin/read-audit";
import type { ReleaseHolder } from "../../domain/releases/holder";
import { explainReleases, WhyQuery } from "../../domain/releases/release-why";
import type { ReleaseSelection } from "../../domain/releases/release-selection";
import { endpoint, type Endpoint } from "../endpoint";
import { json } from "../respond";
import { ADMIN_ERRORS } from "./shared";

const RULES = ["channel", "lane", "withdraw", "updates-window", "feature", "halt", "staff", "target", "rollout", "files"];
const Step = Type.Object({
  rule: Type.String({ description: `The rule: ${RULES.join(", ")} (more as the release rules grow)` }),
  effect: Type.Union([Type.Literal("admit"), Type.Literal("pass"), Type.Literal("next")], {
    description: "admit: served by this rule; pass: passed over for an older release; next: left to the rules after it",
  }),
  reason: Type.String(),
});

const WhyAnswer = Type.Object({
  ok: Type.Literal(true),
  installation: Type.Object({
    activation: Type.Union([Type.String(), Type.Null()]),
    license: Type.String(),
    plan: Type.String(),
    kind: Type.String(),
    device: Type.String(),
    product: Type.Union([Type.String(), Type.Null()]),
    platform: Type.Union([Type.String(), Type.Null()], {
      description: "null: the device holds no activation of the licence; every platform with releases is shown",
    }),
  }),
  lanes: Type.Array(
    Type.Object({
      lane: Type.String(),
      served: Type.Union([Type.String(), Type.Null()], { description: "The version this installation gets on the lane; null: none" }),
      decidedBy: Step,
      releases: Type.Array(Type.Object({ version: Type.String(), served: Type.Boolean(), steps: Type.Array(Step) }), {
        description: "Every live release of the lane, newest first, with each rule's verdict in the order asked",
      }),
    }),
  ),
});

/** GET /admin/releases/why: the release each lane gives an installation, and every rule that decided it. */
export function adminReleaseWhyEndpoints(admin: AdminDeps, releases: ReleaseHolder, selection: ReleaseSelection): Endpoint[] {
  return [
    endpoint({
      method: "GET",
      path: "/admin/releases/why",
      summary:
        "For an installation (activation, or device hash and licence): the release each of its lanes gives it and every rule that decided it (channel, withdraw, updates window, feature, halt, staff, target, rollout)",
      auth: { scope: "releases:read" },
      budget: "admin",
      audit: "release-why",
      querySchema: WhyQuery,
      answer: WhyAnswer,
      errors: [...ADMIN_ERRORS, "invalid_request", "not_found"],
      handler: async ({ admin: caller, queryValues }) => {
        const answer = await explainReleases({ store: admin.store, admin, selection, index: await releases.ready() }, queryValues);
        await auditRead(admin, caller, "release-why", answer.installation.license);
        return json({ ok: true, ...answer });
      },
    }),
  ];
}
