import { queryAudit } from "../../domain/admin/audit-query";
import type { AdminDeps } from "../../domain/admin/deps";
import { readFeed } from "../../domain/admin/feed";
import * as S from "../admin-schemas";
import { endpoint, type Endpoint } from "../endpoint";
import { json } from "../respond";
import { ADMIN_ERRORS } from "./shared";

/** The audit trail and the vendor feed (what mirrors follow), under /admin. */
export function adminRecordEndpoints(admin: AdminDeps): Endpoint[] {
  return [
    endpoint({
      method: "GET",
      path: "/admin/audit",
      summary: "Audit lines, newest first, filtered by license, activation, error code and time",
      auth: { scope: "audit:read" },
      budget: "admin",
      audit: "audit-read",
      querySchema: S.AdminAuditQuery,
      answer: S.AdminAuditPage,
      errors: [...ADMIN_ERRORS],
      handler: async ({ queryValues, admin: caller }) => json({ ok: true, ...(await queryAudit(admin, caller, queryValues)) }),
    }),
    endpoint({
      method: "GET",
      path: "/admin/feed",
      summary: "The vendor feed: revocations, licence changes and release controls after a cursor, in commit order (mirrors follow it)",
      auth: { scope: "feed:read" },
      budget: "admin",
      audit: "feed-read",
      querySchema: S.AdminFeedQuery,
      answer: S.AdminFeedPage,
      errors: [...ADMIN_ERRORS],
      handler: async ({ queryValues, admin: caller }) => json({ ok: true, ...(await readFeed(admin, caller, queryValues)) }),
    }),
  ];
}
