/** Canonical forms: comparison that ignores key order, and minimal wire bodies. */
import { z } from "zod";
import { isProps } from "./check";

/**
 * Two JSON values mean the same: objects compared key by key whatever their order (an absent key
 * and an undefined one alike), arrays element by element. No JSON text is built.
 */
export function deepEqual(a: unknown, b: unknown): boolean {
  a ??= null;
  b ??= null;
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return (
      Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((v, i) => deepEqual(v, b[i]))
    );
  }
  if (!isProps(a) || !isProps(b)) return false;
  const [x, y] = [a, b];
  const keys = (o: Record<string, unknown>) => Object.keys(o).filter((k) => o[k] !== undefined);
  const kx = keys(x);
  return kx.length === keys(y).length && kx.every((k) => deepEqual(x[k], y[k]));
}

/** The object schema inside defaults, nullables, optionals and refinements, if any. */
function objectSchema(schema: z.ZodType): z.ZodObject | undefined {
  let s: z.ZodType = schema;
  for (;;) {
    if (s instanceof z.ZodObject) return s;
    if (s instanceof z.ZodDefault || s instanceof z.ZodNullable || s instanceof z.ZodOptional) {
      s = s.def.innerType as z.ZodType;
      continue;
    }
    return undefined;
  }
}

/**
 * Drops every field equal to its documented default, recursively. The result parses back to
 * the same canonical value (omitted means default), and some canonical values are not valid
 * requests (an unset `num_buckets` reads back as 0 but may only be sent as 1..128).
 */
export function minimize(schema: z.ZodType, value: unknown): unknown {
  const obj = objectSchema(schema);
  if (!obj || value === null || typeof value !== "object" || Array.isArray(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    const field = obj.shape[key] as z.ZodType | undefined;
    if (field instanceof z.ZodDefault && deepEqual(v, field.def.defaultValue)) continue;
    out[key] = field ? minimize(field, v) : v;
  }
  return out;
}
