import { Type } from "@sinclair/typebox";

/**
 * Request bodies as TypeBox schemas: the shape only (types, sizes). The variant's rules for a device
 * (hash form, product values) are checked in domain/device.ts, which names the field it refuses.
 */
const text = (maxLength: number) => Type.String({ maxLength });

export const DeviceSchema = Type.Object({
  hash: text(200),
  name: text(200),
  platform: text(200),
  version: text(200),
  product: Type.Optional(text(200)),
});

export const ActivateBody = Type.Object({ key: text(200), device: DeviceSchema });
export const RefreshBody = Type.Object({ device: DeviceSchema });
export const ChallengeBody = Type.Object({ device: DeviceSchema });
export const ExchangeBody = Type.Object({ id_token: text(16384), device: DeviceSchema });
