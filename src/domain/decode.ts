import type { Static, TSchema } from "@sinclair/typebox";
import { TypeCompiler, ValueErrorType, type TypeCheck } from "@sinclair/typebox/compiler";
import { KeyturnError } from "./errors";
import "./formats";

/**
 * Every input model is checked here: the HTTP layer (Elysia's body validation words its refusal
 * with `describeError`), the console's forms and the CLI call `decode`, so one input answers in the
 * same words whichever way it came.
 */
const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>();

/** The model's compiled check, made once per model. */
export function checkOf<T extends TSchema>(model: T): TypeCheck<T> {
  const known = compiled.get(model);
  if (known) return known as TypeCheck<T>;
  const check = TypeCompiler.Compile(model);
  compiled.set(model, check);
  return check;
}

/** The value as the model's type, or invalid_request naming the first field at fault. */
export function decode<T extends TSchema>(model: T, value: unknown): Static<T> {
  const check = checkOf(model);
  if (check.Check(value)) return value;
  throw new KeyturnError("invalid_request", describeError(check, value));
}

/**
 * The refusal of a body that is JSON but does not fit its schema: names the first field at fault
 * and says what is wrong in plain words; no schema or validator text leaks.
 */
export function describeError(check: TypeCheck<TSchema>, value: unknown): string {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "The body must be a JSON object.";
  const first = check.Errors(value).First();
  if (!first) return "The body is not valid.";
  const field = first.path.replace(/^\//, "").replaceAll("/", ".") || "body";
  const present = first.path
    .split("/")
    .slice(1)
    .reduce<unknown>((v, k) => (v && typeof v === "object" ? (v as Record<string, unknown>)[k] : undefined), value);
  if (present === undefined) return `${field} is required.`;
  const schema = first.schema as {
    type?: string;
    pattern?: string;
    description?: string;
    maxLength?: number;
    minLength?: number;
    enum?: unknown[];
    const?: unknown;
    format?: string;
    minimum?: number;
    maximum?: number;
    maxItems?: number;
  };
  // A field the schema does not know: the error is its parent object's (additionalProperties).
  if (first.type === ValueErrorType.ObjectAdditionalProperties) return `${field} is not a known field.`;
  if (typeof present === "string" && schema.maxLength !== undefined && present.length > schema.maxLength)
    return `${field} is longer than ${schema.maxLength} characters.`;
  if (typeof present === "string" && schema.minLength !== undefined && present.length < schema.minLength)
    return schema.minLength === 1 ? `${field} must not be empty.` : `${field} is shorter than ${schema.minLength} characters.`;
  if (Array.isArray(present) && schema.maxItems !== undefined && present.length > schema.maxItems) return `${field} has more than ${schema.maxItems} items.`;
  if (typeof present === "number" && schema.minimum !== undefined && present < schema.minimum) return `${field} must be at least ${schema.minimum}.`;
  if (typeof present === "number" && schema.maximum !== undefined && present > schema.maximum) return `${field} must be at most ${schema.maximum}.`;
  const allowed = allowedValues(first.schema);
  if (allowed) return `${field} must be one of: ${allowed.join(", ")}.`;
  if (schema.format && typeof present === "string") return `${field} is not a valid ${schema.format}.`;
  // A pattern's refusal says what the value must be in the schema's own description, never the pattern.
  if (schema.pattern !== undefined && typeof present === "string")
    return schema.description ? `${field} must be ${schema.description}.` : `${field} is not in the form this field takes.`;
  const expected = schema.type;
  if (expected) return `${field} must be ${article(expected === "object" ? "JSON object" : expected)}.`;
  return `${field} has a value that is not allowed here.`;
}

/** The literal values a schema (a literal, an enum or a union of literals) admits, if it is one of those. */
function allowedValues(schema: TSchema): string[] | null {
  const s = schema as { const?: unknown; enum?: unknown[]; anyOf?: TSchema[] };
  if (s.const !== undefined) return [JSON.stringify(s.const)];
  if (s.enum) return s.enum.map((v) => JSON.stringify(v));
  if (s.anyOf && s.anyOf.every((o) => (o as { const?: unknown }).const !== undefined))
    return s.anyOf.map((o) => JSON.stringify((o as { const?: unknown }).const));
  return null;
}

function article(noun: string): string {
  return /^[aeiou]/i.test(noun) ? `an ${noun}` : `a ${noun}`;
}
