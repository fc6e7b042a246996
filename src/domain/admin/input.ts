import { KeyturnError } from "../errors";

/**
 * Ids of records as the command line and the console name them (a path's parameter is already
 * held to its route's form by HTTP): a short string, or invalid_request. Operation inputs are
 * decoded with their models instead (model.ts).
 */
export function idParam(value: unknown, field: string, max = 100): string {
  if (typeof value !== "string" || value.trim().length === 0 || value.length > max || /[\x00-\x1f\x7f]/.test(value))
    throw new KeyturnError("invalid_request", `${field} must be a string of 1 to ${max} characters.`);
  return value.trim();
}

/** JSON with object keys sorted at every level: equal for bodies that differ only in key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object" && value !== null)
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  return JSON.stringify(value) ?? "null";
}
