import type { Site } from "../../domain/site";
import * as A from "../answer-schemas";
import { endpoint, type Endpoint } from "../endpoint";
import { json, jsonText } from "../respond";
import { NO_STORE } from "./shared";

/** GET /health, /meta and /openapi.json: no bearer. `openapi` gives the document's text once built. */
export function siteEndpoints(site: Site, openapi: () => Promise<string>): Endpoint[] {
  return [
    endpoint({
      method: "GET",
      path: "/health",
      summary: "ok when the records answer, the first release index is built and the release tree is readable",
      auth: "none",
      budget: "api",
      audit: "request",
      answer: A.HealthAnswer,
      errors: ["unavailable"],
      handler: async () => json({ ok: true, ...(await site.health()) }, 200, NO_STORE),
    }),
    endpoint({
      method: "GET",
      path: "/meta",
      summary: "Service, version, variant, products, features switched on and the public keys",
      auth: "none",
      budget: "api",
      audit: "request",
      answer: A.MetaAnswer,
      errors: [],
      handler: async () => json({ ok: true, ...(await site.meta()) }, 200, NO_STORE),
    }),
    endpoint({
      method: "GET",
      path: "/openapi.json",
      summary: "This document",
      auth: "none",
      budget: "api",
      audit: "request",
      answer: A.OpenApiAnswer,
      errors: [],
      handler: async () => jsonText(await openapi()),
    }),
  ];
}
