import { FormatRegistry } from "@sinclair/typebox";

/**
 * The string formats the schemas use. TypeBox refuses a format it has no check for, so without
 * this every `expires` and `since` sent would be invalid. "date-time" is RFC 3339: answers never
 * carry a fraction, requests may (what JavaScript's toISOString() writes); the domain reads both.
 */
FormatRegistry.Set("date-time", (v) => /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/.test(v) && !Number.isNaN(Date.parse(v)));
