import type { AdminDeps } from "../../domain/admin/deps";
import { auditRead } from "../../domain/admin/read-audit";
import { KeyturnError } from "../../domain/errors";
import { UPLOAD_LIMITS } from "../../domain/releases/upload-model";
import type { ReleaseUploads } from "../../domain/releases/uploads";
import * as S from "../admin-schemas";
import { endpoint, type Endpoint, type ParamDoc } from "../endpoint";
import { json } from "../respond";
import * as U from "../upload-schemas";
import { ADMIN_ERRORS, BODY_ERRORS } from "./shared";

const ID: ParamDoc = { name: "id", description: "The upload's id (upl_…)" };
const CONTENT_RANGE = /^bytes ([0-9]{1,15})-([0-9]{1,15})\/([0-9]{1,15})$/;

/**
 * Release uploads under /admin (scope releases:write): `keyturn release push` creates an upload,
 * PUTs each file in chunks (resuming at the byte the site holds), then publishes it. The rules are
 * the domain's (domain/releases/uploads.ts); docs/releasing-from-ci.md tells the protocol.
 */
export function adminUploadEndpoints(admin: AdminDeps, uploads: ReleaseUploads): Endpoint[] {
  return [
    endpoint({
      method: "POST",
      path: "/admin/uploads",
      summary: "Start uploading a signed release folder (or resume the pending upload of the same folder and files)",
      auth: { scope: "releases:write" },
      budget: "admin",
      audit: "release-upload",
      querySchema: S.NoQuery,
      body: U.UploadCreateBody,
      answer: U.UploadAnswer,
      errors: [...ADMIN_ERRORS, ...BODY_ERRORS, "release_exists", "upload_conflict", "unavailable"],
      handler: async ({ body, admin: caller }) => json({ ok: true, ...(await uploads.create(body, caller)) }),
    }),
    endpoint({
      method: "GET",
      path: "/admin/uploads/{id}",
      summary: "An upload and how many bytes of each file the site holds",
      auth: { scope: "releases:write" },
      budget: "admin",
      audit: "release-upload-read",
      params: [ID],
      querySchema: S.NoQuery,
      answer: U.UploadAnswer,
      errors: [...ADMIN_ERRORS, "not_found"],
      handler: async ({ params, admin: caller }) => {
        const upload = uploads.get(params.id);
        await auditRead(admin, caller, "release-upload-read");
        return json({ ok: true, upload });
      },
    }),
    endpoint({
      method: "PUT",
      path: "/admin/uploads/{id}/files/{name}",
      summary: `Write a chunk of a file (at most ${UPLOAD_LIMITS.chunkBytes} bytes, application/octet-stream) at the byte the site holds, as Content-Range says; the last chunk makes the site check the file's SHA-256`,
      auth: { scope: "releases:write" },
      budget: "admin",
      audit: "release-upload-data",
      params: [ID, { name: "name", description: "The file's name, as listed when the upload was created" }],
      querySchema: S.NoQuery,
      rawBody: { type: "application/octet-stream", description: "The file's bytes from START to END" },
      headers: [
        {
          name: "Content-Range",
          description: "bytes START-END/SIZE: where the body's bytes go (START: the bytes the site holds)",
          schema: U.ContentRangeHeader,
        },
      ],
      answer: U.UploadChunkAnswer,
      errors: [...ADMIN_ERRORS, "invalid_request", "not_found", "payload_too_large", "upload_conflict", "release_invalid"],
      handler: async ({ params, request, admin: caller }) => {
        const m = CONTENT_RANGE.exec(request.headers.get("content-range") ?? "");
        if (!m) throw new KeyturnError("invalid_request", "A chunk needs Content-Range: bytes START-END/SIZE.");
        const range = { start: Number(m[1]), end: Number(m[2]), total: Number(m[3]) };
        const declared = request.headers.get("content-length");
        if (declared !== null && Number(declared) !== range.end - range.start + 1)
          throw new KeyturnError("invalid_request", "Content-Length must be the length Content-Range gives.");
        const file = await uploads.write(params.id, params.name, range, request.body);
        // One line per token within auditRead's window, not one per chunk: a 4 GiB installer is a thousand PUTs.
        await auditRead(admin, caller, "release-upload-data");
        return json({ ok: true, file });
      },
    }),
    endpoint({
      method: "DELETE",
      path: "/admin/uploads/{id}",
      summary: "Abandon an upload: its bytes are removed",
      auth: { scope: "releases:write" },
      budget: "admin",
      audit: "release-upload-abandon",
      params: [ID],
      querySchema: S.NoQuery,
      answer: U.UploadAbandonAnswer,
      errors: [...ADMIN_ERRORS, "not_found", "upload_conflict"],
      handler: async ({ params, admin: caller }) => {
        await uploads.abandon(params.id, caller);
        return json({ ok: true });
      },
    }),
    endpoint({
      method: "POST",
      path: "/admin/uploads/{id}/publish",
      summary:
        "Check the complete upload as release check does (signature with the site's release public key, hashes, feed files) and move it into the release tree at once; refused, nothing is left",
      auth: { scope: "releases:write" },
      budget: "admin",
      audit: "release-publish",
      params: [ID],
      querySchema: S.NoQuery,
      answer: U.PublishAnswer,
      errors: [...ADMIN_ERRORS, "not_found", "upload_conflict", "release_invalid", "release_exists", "unavailable"],
      handler: async ({ params, admin: caller }) => json({ ok: true, ...(await uploads.publish(params.id, caller)) }),
    }),
  ];
}
