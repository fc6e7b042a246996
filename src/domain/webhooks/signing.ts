import { createHmac } from "node:crypto";

/** `whsec_` + base64 of 24 random bytes, as Standard Webhooks secrets are written. */
export function newWebhookSecret(): string {
  return "whsec_" + Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString("base64");
}

/** What a webhook secret is sealed with in the records (src/domain/record-seal.ts): bound to its endpoint. */
export const webhookSecretContext = (endpointId: string) => `webhook-secret\n${endpointId}`;

/** The Standard Webhooks headers of one attempt: the signature is over "id.timestamp.body" with the secret's bytes. */
export function signedHeaders(secret: string, id: string, timestampSeconds: number, body: string): Record<string, string> {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const signature = createHmac("sha256", key).update(`${id}.${timestampSeconds}.${body}`).digest("base64");
  return {
    "content-type": "application/json",
    "webhook-id": id,
    "webhook-timestamp": String(timestampSeconds),
    "webhook-signature": `v1,${signature}`,
  };
}
