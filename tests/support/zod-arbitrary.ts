/**
 * fast-check arbitraries read off the contract's zod (4) schemas, so a field added to a schema is
 * generated without anyone listing it: objects (optional and defaulted keys sometimes omitted),
 * strings (regex, length), numbers (int, bounds), booleans, enums, literals, lists, records,
 * nullable, unions and pipes. What a schema checks in code (`refine`, `superRefine`: the
 * cross-field rules) is kept by filtering with the schema itself; where random values would
 * almost never pass (a URL, XML metadata, "exactly one of"), a hook at that path says how to make
 * one. A schema kind the walker does not know throws, naming the path, rather than guessing.
 */
import fc from "fast-check";
import type { z } from "zod";

/** Where a value sits in the schema: `module.field`, `list[]`, `map{}` (values), `map{key}` (keys). */
export type SchemaPath = string;
/** How to build the value at one path; `walk` builds any other schema the ordinary way. */
export type Hook =
  | fc.Arbitrary<unknown>
  | ((at: { schema: z.ZodType; path: SchemaPath; walk: Walk }) => fc.Arbitrary<unknown>);
export type Walk = (schema: z.ZodType, path: SchemaPath) => fc.Arbitrary<unknown>;

export interface ArbitraryOptions {
  /** Paths (as above, from the root's `path`) whose values a hook makes. */
  hooks?: Record<SchemaPath, Hook>;
  /** Bound on generated lists and maps (the contract's own bound when smaller). Default 4. */
  maxItems?: number;
  /** Bound on generated free text (the contract's own bound when smaller). Default 30. */
  maxLength?: number;
}

const defOf = (schema: z.ZodType): any => (schema as any)._zod.def;
const checksOf = (schema: z.ZodType): any[] => (defOf(schema).checks ?? []).map((c: any) => c._zod.def);
const hasCodeChecks = (schema: z.ZodType) => checksOf(schema).some((c) => c.check === "custom");
const bound = (schema: z.ZodType, check: "min_length" | "max_length"): number | undefined => {
  const found = checksOf(schema).filter((c) => c.check === check);
  if (found.length === 0) return undefined;
  const values = found.map((c) => (check === "min_length" ? c.minimum : c.maximum) as number);
  return check === "min_length" ? Math.max(...values) : Math.min(...values);
};

/** The schema inside `.optional()`, `.default()`, `.nullable()` wrappers. */
export function unwrap(schema: z.ZodType): z.ZodType {
  let s = schema;
  while (["optional", "default", "prefault", "nullable"].includes(defOf(s).type)) s = defOf(s).innerType;
  return s;
}

/** Whether a key of an object may be left out (optional or defaulted). */
const omittable = (schema: z.ZodType) => (schema as any)._zod.optin === "optional";

/** An arbitrary of values `schema` accepts (its input side: what a client may send). */
export function arbitraryOf(
  schema: z.ZodType,
  options: ArbitraryOptions = {},
  root: SchemaPath = "",
): fc.Arbitrary<unknown> {
  const hooks = options.hooks ?? {};
  const maxItems = options.maxItems ?? 4;
  const maxLength = options.maxLength ?? 30;
  const join = (path: string, key: string) => (path === "" ? key : `${path}.${key}`);

  const walk: Walk = (s, path) => {
    const hook = hooks[path];
    if (hook !== undefined) return typeof hook === "function" ? hook({ schema: s, path, walk }) : hook;
    const arb = plain(s, path);
    // Rules stated in code (refine, superRefine) are kept by the schema itself.
    return hasCodeChecks(s) ? arb.filter((v) => s.safeParse(v).success) : arb;
  };

  const plain = (s: z.ZodType, path: SchemaPath): fc.Arbitrary<unknown> => {
    const def = defOf(s);
    switch (def.type) {
      case "optional":
      case "default":
      case "prefault":
        return walk(def.innerType, path);
      case "nullable":
        return fc.option(walk(def.innerType, path), { nil: null, freq: 3 });
      case "boolean":
        return fc.boolean();
      case "enum":
        return fc.constantFrom(...Object.values(def.entries));
      case "literal":
        return fc.constantFrom(...def.values);
      case "number": {
        const n = s as z.ZodNumber;
        const min = Number.isFinite(n.minValue) ? n.minValue! : -(2 ** 31);
        const max = Number.isFinite(n.maxValue) ? n.maxValue! : 2 ** 31;
        return n.isInt ? fc.integer({ min, max }) : fc.double({ min, max, noNaN: true });
      }
      case "string": {
        const minLength = bound(s, "min_length") ?? 0;
        const max = Math.min(bound(s, "max_length") ?? maxLength, Math.max(maxLength, minLength));
        const patterns = checksOf(s)
          .filter((c) => c.check === "string_format" && c.format === "regex")
          .map((c) => c.pattern as RegExp);
        if (patterns.length === 0) return fc.string({ minLength, maxLength: max });
        return fc
          .stringMatching(patterns[0]!, { size: "xsmall" })
          .filter((v) => v.length >= minLength && v.length <= max && patterns.every((p) => p.test(v)));
      }
      case "array": {
        const minLength = bound(s, "min_length") ?? 0;
        const max = Math.max(minLength, Math.min(bound(s, "max_length") ?? maxItems, maxItems));
        return fc.array(walk(def.element, `${path}[]`), { minLength, maxLength: max });
      }
      case "record":
        return fc.dictionary(
          walk(def.keyType, `${path}{key}`) as fc.Arbitrary<string>,
          walk(def.valueType, `${path}{}`),
          { maxKeys: maxItems },
        );
      case "object": {
        const shape = def.shape as Record<string, z.ZodType>;
        const requiredKeys = Object.keys(shape).filter((k) => !omittable(shape[k]!));
        const fields = Object.fromEntries(Object.entries(shape).map(([k, f]) => [k, walk(f, join(path, k))]));
        return fc.record(fields, { requiredKeys });
      }
      case "union":
        return fc.oneof(...(def.options as z.ZodType[]).map((o) => walk(o, path)));
      case "pipe":
        // `in` then `out`: a value of `out`'s kind that `in` also takes (a string normalised to an
        // enum, say), unless `out` is a transform, whose input is `in`'s.
        return defOf(def.out).type === "transform"
          ? walk(def.in, path).filter((v) => s.safeParse(v).success)
          : walk(def.out, path).filter((v) => s.safeParse(v).success);
      default:
        throw new Error(`no arbitrary for a zod ${def.type} at "${path}": add a hook for this path`);
    }
  };
  return walk(schema, root);
}

/**
 * A hook for an object of nullable slots of which exactly one is set (OAuth's identity
 * providers): one slot, made the ordinary way, the others left out.
 */
export const exactlyOneSlot: Hook = ({ schema, path, walk }) => {
  const shape = defOf(unwrap(schema)).shape as Record<string, z.ZodType>;
  return fc
    .constantFrom(...Object.keys(shape))
    .chain((key) => walk(unwrap(shape[key]!), `${path}.${key}`).map((v) => ({ [key]: v })));
};
