import { b64url, sha256 } from "./encoding.js";
import { clientVariant, type VariantName } from "./variants.js";

/** The device an installation sends (the spec's Device table). */
export interface Device {
  readonly hash: string;
  readonly name: string;
  readonly platform: string;
  readonly version: string;
  /** alpha and beta only; absent in gamma. */
  readonly product?: string;
}

/** Where the caller keeps the device identifier (a file, the registry, the app's settings store). */
export interface DeviceIdStorage {
  read(): string | null | undefined | Promise<string | null | undefined>;
  write(id: string): void | Promise<void>;
}

const ID = /^[A-Za-z0-9_-]{16,128}$/;

/** A new random device identifier: 32 random bytes, base64url. Never derived from hardware. */
export function newDeviceId(): string {
  return b64url(crypto.getRandomValues(new Uint8Array(32)));
}

/**
 * The installation's device identifier: the stored one, or a new one written to the storage first.
 * Every program of an alpha installation must use the same storage (they share one seat).
 */
export async function loadDeviceId(storage: DeviceIdStorage): Promise<string> {
  const stored = (await storage.read())?.trim();
  if (stored && ID.test(stored)) return stored;
  const id = newDeviceId();
  await storage.write(id);
  return id;
}

/** device.hash: SHA-256 of `<variant>-device:` followed by the identifier, base64url (43 characters). */
export async function deviceHash(variant: VariantName, deviceId: string): Promise<string> {
  return b64url(await sha256(clientVariant(variant).deviceTextPrefix + deviceId));
}
