/**
 * Validation of Pulumi-side inputs against the contract's own schemas, failures named by Pulumi
 * property path. Never throws and never calls the API: it runs during previews. Values still
 * unknown in a preview are not judged.
 */
import type { z } from "zod";
import { ID_PATTERN, issuesToProblems } from "../../sdk/contract";
import { camelPath, nonCamelKeys, toCamel, toWire } from "./case";
import { containsUnknown, pathHitsUnknown, UNKNOWN } from "./unknown";

export interface CheckFailure {
  property: string;
  reason: string;
}

export interface Checked<I> {
  /**
   * Canonical inputs (defaults filled) when every value is known; while some are unknown (a
   * preview), the inputs as given, unknown values in place.
   */
  inputs: I;
  failures: CheckFailure[];
}

/** Brain values carry the edge (a path parameter on the wire) and `adopt` beside the wire fields. */
export interface LocalValues {
  edge_id?: string;
  adopt?: boolean;
}

/** Inputs that are not wire fields: `edgeId` (in the path) and `adopt`. */
export interface LocalInputs {
  edgeId?: boolean;
  adopt?: boolean;
}

export type Props = Record<string, unknown>;
export const isProps = (v: unknown): v is Props => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * Program inputs (camelCase) → the brain's value (the wire's canonical shape, defaults filled,
 * `edge_id` and `adopt` beside it), or failures named by Pulumi property path: one conversion to
 * the wire, one pass of the contract's schema.
 */
export function checkAgainst<I>(schema: z.ZodType<Props>, news: unknown, local: LocalInputs): Checked<I> {
  if (!isProps(news)) {
    return {
      inputs: {} as I,
      failures: [{ property: "(inputs)", reason: "must be an object of properties" }],
    };
  }
  try {
    return checkObject<I>(schema, news, local);
  } catch (e) {
    // Pathological inputs (e.g. nesting deep enough to exhaust the stack) fail; they never throw.
    const why = e instanceof Error ? e.message : String(e);
    return {
      inputs: { ...news } as I,
      failures: [{ property: "(inputs)", reason: `could not be checked: ${why}` }],
    };
  }
}

function checkObject<I>(schema: z.ZodType<Props>, news: Props, local: LocalInputs): Checked<I> {
  const { edgeId, adopt, ...rest } = news;
  const failures: CheckFailure[] = [];

  if (local.edgeId) {
    if (edgeId === undefined || edgeId === null || edgeId === "") {
      failures.push({ property: "edgeId", reason: "edgeId is required (the id of the edge, e.g. edge.id)" });
    } else if (edgeId !== UNKNOWN && (typeof edgeId !== "string" || !ID_PATTERN.test(edgeId))) {
      failures.push({
        property: "edgeId",
        reason: "must be an edge id (1 to 64 characters from A-Z, a-z, 0-9 and _)",
      });
    }
  } else if (edgeId !== undefined) {
    failures.push({ property: "edgeId", reason: "unknown property" });
  }
  if (adopt !== undefined && adopt !== UNKNOWN && typeof adopt !== "boolean") {
    failures.push({ property: "adopt", reason: "must be a boolean" });
  }
  if (adopt !== undefined && !local.adopt) failures.push({ property: "adopt", reason: "unknown property" });

  for (const path of nonCamelKeys(rest)) {
    failures.push({
      property: path,
      reason: `use camelCase property names (${toCamel(path.slice(path.lastIndexOf(".") + 1))})`,
    });
  }

  const wire = toWire(rest);
  const result = schema.safeParse(wire);
  if (!result.success) {
    const issues = result.error.issues
      // An unknown field is a typo whatever its value, and its object is known: always report it.
      .filter((i) => i.code === "unrecognized_keys" || !pathHitsUnknown(wire, i.path))
      .map((i): z.core.$ZodIssue =>
        i.code === "unrecognized_keys"
          ? { ...i, path: camelPath(i.path), keys: i.keys.map(toCamel) }
          : { ...i, path: camelPath(i.path) },
      );
    for (const p of issuesToProblems(issues))
      failures.push({ property: p.field || "(inputs)", reason: p.msg });
  }

  const known = !containsUnknown(rest);
  const value: Props = { ...(result.success && known ? result.data : wire) };
  if (local.edgeId) value.edge_id = edgeId;
  if (adopt !== undefined) value.adopt = adopt;
  return { inputs: value as I, failures };
}

/**
 * Stored state (camelCase, written by any version) → the brain's value: one conversion to the
 * wire, one pass of the same schema, so defaults written by any version are filled the same way.
 * A value today's schema refuses is kept as it is (the diff then shows it as a change).
 */
export function canonicalAgainst<I>(schema: z.ZodType<Props>, value: Props, local: LocalValues): I {
  const wire = toWire<Props>(value);
  const result = schema.safeParse(wire);
  return { ...(result.success ? result.data : wire), ...local } as I;
}
