import "../domain/formats";
import { Type } from "@sinclair/typebox";

/** The answers of the release upload API (endpoints/admin-uploads.ts); its request body is the domain's UploadCreateInput. */
export { UploadCreateInput as UploadCreateBody } from "../domain/releases/upload-model";

const Timestamp = Type.String({ format: "date-time", description: "ISO 8601 with a numeric offset, no fraction" });
const Ok = Type.Literal(true);

const UploadFileState = Type.Object({
  name: Type.String(),
  size: Type.Integer({ minimum: 0 }),
  sha256: Type.String({ pattern: "^[0-9a-f]{64}$" }),
  received: Type.Integer({ minimum: 0, description: "Bytes the site holds; a push resumes from here" }),
});

const Upload = Type.Object({
  id: Type.String({ pattern: "^upl_[0-9a-f]{32}$" }),
  lane: Type.String(),
  folder: Type.String(),
  halted: Type.Boolean(),
  created: Timestamp,
  expires: Timestamp,
  files: Type.Array(UploadFileState),
});

export const UploadAnswer = Type.Object({
  ok: Ok,
  upload: Upload,
  resumed: Type.Optional(Type.Boolean({ description: "true when a pending upload of the same folder and files was answered (a push started again)" })),
});

export const UploadChunkAnswer = Type.Object({
  ok: Ok,
  file: Type.Object({ name: Type.String(), size: Type.Integer({ minimum: 0 }), received: Type.Integer({ minimum: 0 }) }),
});

export const UploadAbandonAnswer = Type.Object({ ok: Ok });

export const PublishAnswer = Type.Object({
  ok: Ok,
  release: Type.Object({ lane: Type.String(), version: Type.String(), folder: Type.String() }),
  halted: Type.Boolean({ description: "Published halted at 0 %: resume it (POST /admin/releases/{lane}/{version}/resume) to start its ramp" }),
  live: Type.Boolean({ description: "Served already; false while the site still verifies the installer's bytes (seconds)" }),
  ref: Type.String({ description: "The audit line of the publication" }),
});

export const ContentRangeHeader = Type.String({ pattern: "^bytes [0-9]{1,15}-[0-9]{1,15}/[0-9]{1,15}$" });
