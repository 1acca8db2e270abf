/**
 * camelCase (Pulumi inputs and outputs) ⇄ snake_case (the wire), in one place.
 * Header maps are the exception: their keys are header names and are kept verbatim.
 */

/** Wire paths whose object keys are data (header names), never converted. */
const VERBATIM_MAPS: ReadonlySet<string> = new Set(["request_headers.add", "response_headers.add"]);

export const toSnake = (key: string): string => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
/** Engine-reserved names (`__provider`) are kept as they are. */
export const toCamel = (key: string): string =>
  key.startsWith("__") ? key : key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

type Path = string[];

function convert(
  value: unknown,
  path: Path,
  rename: (k: string) => string,
  wirePath: (p: Path) => string,
): unknown {
  if (Array.isArray(value)) return value.map((v) => convert(v, path, rename, wirePath));
  if (value === null || typeof value !== "object") return value;
  const verbatim = VERBATIM_MAPS.has(wirePath(path));
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    const k = verbatim ? key : rename(key);
    out[k] = verbatim ? v : convert(v, [...path, key], rename, wirePath);
  }
  return out;
}

/**
 * Pulumi-side (camelCase) object → wire (snake_case) object. `at` is where the value sits in a
 * route (e.g. `["requestHeaders"]` for that module alone), so header maps are recognised.
 */
export function toWire<T = Record<string, unknown>>(value: unknown, at: string[] = []): T {
  return convert(value, at, toSnake, (p) => p.map(toSnake).join(".")) as T;
}

/** Wire (snake_case) object → Pulumi-side (camelCase) object; `at` as for toWire, in wire names. */
export function fromWire<T = Record<string, unknown>>(value: unknown, at: string[] = []): T {
  return convert(value, at, toCamel, (p) => p.join(".")) as T;
}

/**
 * Keys of a Pulumi-side object that are not camelCase (e.g. `backend_id`), with their paths:
 * such a key would otherwise slip through as its wire name.
 */
export function nonCamelKeys(value: unknown, path: Path = []): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => nonCamelKeys(v, [...path, String(i)]));
  if (value === null || typeof value !== "object") return [];
  if (VERBATIM_MAPS.has(path.map(toSnake).join("."))) return [];
  const bad: string[] = [];
  for (const [key, v] of Object.entries(value)) {
    if (key.includes("_") && !key.startsWith("__")) bad.push([...path, key].join("."));
    bad.push(...nonCamelKeys(v, [...path, key]));
  }
  return bad;
}

/** A wire JSON path (from a zod issue) in Pulumi-side names, header names untouched. */
export function camelPath(path: ReadonlyArray<PropertyKey>): PropertyKey[] {
  const out: PropertyKey[] = [];
  const wire: string[] = [];
  for (const seg of path) {
    const verbatim = VERBATIM_MAPS.has(wire.join("."));
    out.push(typeof seg === "string" && !verbatim ? toCamel(seg) : seg);
    wire.push(String(seg));
  }
  return out;
}
