/**
 * keyturn's client kit: what an installed program needs to talk to a keyturn site and to check
 * its answers offline. Runs on Node >= 20, Bun and Electron's main process; imports only jose
 * (bundled into the package `bun build.ts` packs) and Node built-ins.
 */
export {
  KeyturnClient,
  type Activation,
  type ClientOptions,
  type Current,
  type Entitlement,
  type Identity,
  type UpdateCheck,
  type VerifyOptions,
} from "./client.js";
export { deviceHash, loadDeviceId, newDeviceId, type Device, type DeviceIdStorage } from "./device.js";
export { partialPaths, type DownloadOptions, type DownloadProgress, type DownloadResult } from "./download.js";
export { KeyturnClientError, type ClientErrorCode, type SignatureReason, type TokenReason } from "./errors.js";
export { installReportBody, type InstallOutcome, type InstallReport } from "./install-report.js";
export { KeySet, type PublicKeys } from "./keys.js";
export { parseManifest, verifyManifestSignature, type Lane, type Release } from "./manifest.js";
export { offlineRequestCode, readOfflineRequestCode, tokenOfAnswerCode, type OfflineRequest } from "./offline.js";
export { verifyEntitlementToken, type EntitlementClaims, type TokenCheck, type VerifiedToken } from "./token.js";
export { feature, hasFeature, updatesCover, updatesUntil, type Features, type TermsSource } from "./terms.js";
export { CLIENT_VARIANTS, clientVariant, type ClientVariant, type VariantName } from "./variants.js";
export { compareVersions } from "./versions.js";
