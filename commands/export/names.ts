/**
 * Names for what `pulumi-edge export` writes: entry names of edges.yaml (which are the Pulumi
 * resource names), the code names of the import file, and the config keys of secrets. Valid,
 * unique, and stable: derived from what a person reads (description, a `name` in the metadata,
 * the host or the match), never from the order of a listing; where two would clash, the older
 * object keeps the plain name and the newer one gets the end of its id.
 */
import { ENTRY_NAME } from "../../provider/declarative/load";

/** Longest name made from free text (ids and suffixes may add to it, within ENTRY_NAME's 63). */
const SLUG_MAX = 40;

/** Lowercase ASCII words of `text` joined by `-`, at most SLUG_MAX characters: `Public web edge` → `public-web-edge`. */
export function slug(text: string): string {
  const words = text
    .normalize("NFKD")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
  let out = "";
  for (const w of words) {
    const next = out ? `${out}-${w}` : w;
    if (next.length > SLUG_MAX) return out || w.slice(0, SLUG_MAX);
    out = next;
  }
  return out;
}

/** A `name` in machine-readable metadata (a JSON object's string `name`), if any. */
function metadataName(metadata: string): string | undefined {
  if (!metadata.trimStart().startsWith("{")) return undefined;
  try {
    const parsed: unknown = JSON.parse(metadata);
    if (parsed !== null && typeof parsed === "object" && "name" in parsed && typeof parsed.name === "string")
      return parsed.name;
  } catch {
    // Not JSON: no name in it.
  }
  return undefined;
}

/** The first candidate that makes a non-empty slug, else the id (ids are valid names). */
function firstSlug(candidates: Array<string | undefined>, id: string): string {
  for (const c of candidates) {
    const s = c === undefined ? "" : slug(c);
    if (s) return s;
  }
  return id;
}

export interface EdgeLike {
  id: string;
  description: string;
  metadata: string;
  hostports: string[];
}

/** An edge's name: its description, a name in its metadata, its first host, else its id. */
export const edgeBaseName = (edge: EdgeLike): string =>
  firstSlug(
    [edge.description, metadataName(edge.metadata), edge.hostports[0]?.replace(/:\d+$/, "")],
    edge.id,
  );

export interface RouteLike {
  id: string;
  description: string;
  metadata: string;
  match: string;
}

/** A route's name: its description, a name in its metadata, its match (`/` is `root`), else its id. */
export const routeBaseName = (route: RouteLike): string =>
  firstSlug(
    [route.description, metadataName(route.metadata), route.match, route.match === "/" ? "root" : undefined],
    route.id,
  );

/** Oldest first, then by id: the order in which names are handed out. */
export function byAge<T extends { id: string; created_at: string }>(items: readonly T[]): T[] {
  return [...items].sort((a, b) =>
    a.created_at !== b.created_at
      ? a.created_at < b.created_at
        ? -1
        : 1
      : a.id < b.id
        ? -1
        : a.id > b.id
          ? 1
          : 0,
  );
}

/**
 * Unique entry names for `items` (give them oldest first): each its base name, unless an older
 * one has it; then the base and the last 6 characters of its id, then a counter.
 */
export function uniqueNames<T extends { id: string }>(
  items: readonly T[],
  base: (item: T) => string,
): Map<T, string> {
  const taken = new Set<string>();
  const names = new Map<T, string>();
  for (const item of items) {
    const plain = base(item);
    let name = plain;
    if (taken.has(name)) name = `${plain}-${item.id.slice(-6)}`;
    for (let n = 2; taken.has(name); n++) name = `${plain}-${item.id.slice(-6)}-${n}`;
    if (!ENTRY_NAME.test(name)) throw new Error(`internal: made the invalid entry name "${name}"`);
    taken.add(name);
    names.set(item, name);
  }
  return names;
}

/** `["web", "stripe-hooks", "webhookSecret"]` → `webStripeHooksWebhookSecret`: an identifier. */
export function camelName(parts: readonly string[]): string {
  const words = parts.flatMap((p) => p.split(/[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])/)).filter(Boolean);
  const joined = words
    .map((w, i) => (i === 0 ? w.toLowerCase() : w[0]!.toUpperCase() + w.slice(1).toLowerCase()))
    .join("");
  return /^[a-z]/.test(joined) ? joined : `e${joined}`;
}

/** Hands out identifiers, each unique among those handed out before (a counter where needed). */
export class Identifiers {
  private readonly taken = new Set<string>();
  take(parts: readonly string[]): string {
    const plain = camelName(parts);
    let name = plain;
    for (let n = 2; this.taken.has(name); n++) name = `${plain}${n}`;
    this.taken.add(name);
    return name;
  }
}
