import { Type, type Static } from "@sinclair/typebox";
import { closed } from "../admin/model";
import { MAX_FEED_DELTAS } from "./feed-files";

/**
 * The limits of a release upload (`keyturn release push`, POST /admin/uploads). A release folder is
 * a manifest, its signature, the installer and a few feed files; its size is the installer's.
 */
export const UPLOAD_LIMITS = {
  /**
   * Files of one release folder: the manifest, its .sig, the installer, a blockmap and a Tauri .sig,
   * and the deltas its feeds may list, so that every folder the scan serves can be pushed (23).
   */
  files: 5 + MAX_FEED_DELTAS.sparkle + MAX_FEED_DELTAS.velopack + MAX_FEED_DELTAS.squirrel,
  /** Bytes of one release folder, all files together. */
  releaseBytes: 8 * 1024 ** 3,
  /** Bytes of one PUT: within the HTTP server's request body limit (cli/transport.ts, 8 MiB). */
  chunkBytes: 4 * 1024 ** 2,
  /** Uploads pending at once on a site; each holds disk until published, abandoned or expired. */
  pending: 16,
  /** An upload not written to for this long is removed with its bytes. */
  expiryMs: 24 * 3_600_000,
} as const;

/** A file name of a release folder: plain, URL-safe, not hidden, no path (`..` is refused by rule too). */
export const UPLOAD_FILE_NAME = "^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$";

export const UploadFileInput = closed({
  name: Type.String({ pattern: UPLOAD_FILE_NAME, description: "The file's name in the release folder" }),
  size: Type.Integer({ minimum: 0, maximum: UPLOAD_LIMITS.releaseBytes, description: "Its size in bytes" }),
  sha256: Type.String({ pattern: "^[0-9a-f]{64}$", description: "Its SHA-256, 64 lower-case hex digits" }),
});

export const UploadCreateInput = closed({
  lane: Type.String({ maxLength: 120, description: "The lane, product/channel/platform (gamma: channel/platform)" }),
  folder: Type.String({ pattern: UPLOAD_FILE_NAME, description: "The release folder's name in its lane (the version is a good choice)" }),
  files: Type.Array(UploadFileInput, {
    minItems: 2,
    maxItems: UPLOAD_LIMITS.files,
    description: "Every file of the folder, the manifest and its .sig among them",
  }),
  halted: Type.Optional(Type.Boolean({ description: "Publish halted at 0 % (the manifest's rollout must be a ramp, `days`): a person resumes it" })),
});

export type UploadCreate = Static<typeof UploadCreateInput>;
export type UploadFile = Static<typeof UploadFileInput>;
