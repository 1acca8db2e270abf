/**
 * Edge configuration kept as YAML in a repository: parsed, then validated with the very checks
 * `pulumi preview` runs (the providers' own `check`, hence the service's schemas). Every
 * problem names the file, the line, the entry and the field.
 */
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import YAML, { isNode, LineCounter, type Document } from "yaml";
import { z } from "zod";
import { check, type ResourceKind } from "../model";

/** A `!secret name` value: resolved from the stack's secret config at deployment. */
export class SecretRef {
  constructor(readonly name: string) {}
}

/** The YAML tag of a `!secret name` value, for reading and for writing (`pulumi-edge export`). */
export const secretTag = {
  tag: "!secret",
  identify: (v: unknown) => v instanceof SecretRef,
  resolve: (name: string) => new SecretRef(name),
  // Called for the values `identify` took: SecretRefs.
  stringify: (item: { value: unknown }) =>
    item.value instanceof SecretRef ? item.value.name : String(item.value),
};

export type RouteEntry = Record<string, unknown>;
export interface HttpsEdgeEntry {
  description?: string;
  metadata?: string;
  hostports?: string[];
  routes: Record<string, RouteEntry>;
}
export interface TlsEdgeEntry {
  description?: string;
  metadata?: string;
  hostports?: string[];
  ipRestriction?: Record<string, unknown>;
}
/** A validated edge configuration file. */
export interface EdgeConfig {
  file: string;
  httpsEdges: Record<string, HttpsEdgeEntry>;
  tlsEdges: Record<string, TlsEdgeEntry>;
}

/** All the problems of one file, one line each: `file:line:col: entry: field: message`. */
export class EdgeConfigError extends Error {
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`${file} is not a valid edge configuration:\n  ${problems.join("\n  ")}`);
    this.name = "EdgeConfigError";
  }
}

/** What an entry name (an edge, a route) may be: it is also part of a Pulumi resource name. */
export const ENTRY_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;
const entryName = z
  .string()
  .regex(ENTRY_NAME, { error: "names are 1-63 characters: letters, digits, _ . -" });
const edgeFields = {
  description: z.unknown().optional(),
  metadata: z.unknown().optional(),
  hostports: z.unknown().optional(),
};
const structure = z.strictObject({
  httpsEdges: z
    .record(
      entryName,
      z.strictObject({
        ...edgeFields,
        routes: z
          .record(entryName, z.record(z.string(), z.unknown()), { error: "must map route names to routes" })
          .default({}),
      }),
    )
    .default({}),
  tlsEdges: z
    .record(
      entryName,
      z.strictObject({
        ...edgeFields,
        ipRestriction: z.record(z.string(), z.unknown(), { error: "must be an object" }).optional(),
      }),
    )
    .default({}),
});

/** Placeholders for what is only known at deployment, so validation judges everything else. */
const PLACEHOLDER_EDGE_ID = "edge_from_this_file";
function withPlaceholders(value: unknown): unknown {
  if (value instanceof SecretRef) return "secret-placeholder";
  if (Array.isArray(value)) return value.map(withPlaceholders);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withPlaceholders(v)]));
  }
  return value;
}

/** `circuitBreaker.numBuckets`, `requestHeaders.add["X-A"]`, `ipPolicyIds[0]` → path segments. */
function pathSegments(property: string): (string | number)[] {
  const out: (string | number)[] = [];
  for (const m of property.matchAll(/([A-Za-z_][A-Za-z0-9_-]*)|\[(\d+)\]|\["((?:[^"\\]|\\.)*)"\]/g)) {
    if (m[1] !== undefined) out.push(m[1]);
    else if (m[2] !== undefined) out.push(Number(m[2]));
    else out.push(String(JSON.parse(`"${m[3]}"`))); // a JSON string's text: a string
  }
  return out;
}

/** Parses and validates an edge configuration; throws EdgeConfigError listing every problem. */
export async function parseEdgeConfig(text: string, file = "edges.yaml"): Promise<EdgeConfig> {
  const lines = new LineCounter();
  const doc = YAML.parseDocument(text, { customTags: [secretTag], lineCounter: lines, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new EdgeConfigError(
      file,
      doc.errors.map(
        (e) =>
          `${file}:${e.linePos?.[0]?.line ?? 0}:${e.linePos?.[0]?.col ?? 0}: ${e.message.split("\n")[0]}`,
      ),
    );
  }
  const where = (path: readonly PropertyKey[]) => locate(doc, lines, file, path);
  const parsed = structure.safeParse(doc.toJS() ?? {});
  if (!parsed.success) {
    throw new EdgeConfigError(
      file,
      parsed.error.issues.map((i) => {
        const path = i.code === "unrecognized_keys" ? [...i.path, ...i.keys.slice(0, 1)] : i.path;
        const msg = i.code === "unrecognized_keys" ? `unknown key "${i.keys.join('", "')}"` : i.message;
        return `${where(path)}: ${path.join(".") || "(file)"}: ${msg}`;
      }),
    );
  }
  const config = parsed.data as Omit<EdgeConfig, "file">;
  const problems: string[] = [];
  const report = (kind: ResourceKind, entry: (string | number)[], inputs: Record<string, unknown>) => {
    const { failures } = check(kind, withPlaceholders(inputs));
    for (const f of failures) {
      problems.push(
        `${where([...entry, ...pathSegments(f.property)])}: ${entry.join(".")}: ${f.property}: ${f.reason}`,
      );
    }
  };

  for (const [name, edge] of Object.entries(config.httpsEdges)) {
    const { routes, ...fields } = edge;
    report("httpsEdge", ["httpsEdges", name], fields);
    const selectors = new Map<string, string>();
    for (const [routeName, route] of Object.entries(routes)) {
      report("httpsEdgeRoute", ["httpsEdges", name, "routes", routeName], {
        ...route,
        edgeId: PLACEHOLDER_EDGE_ID,
      });
      const selector = `${String(route.matchType)} ${String(route.match)}`;
      const first = selectors.get(selector);
      if (first !== undefined) {
        problems.push(
          `${where(["httpsEdges", name, "routes", routeName, "match"])}: httpsEdges.${name}.routes.${routeName}: match: ` +
            `same matchType and match as route "${first}" (one route per selector on an edge)`,
        );
      } else selectors.set(selector, routeName);
    }
  }
  for (const [name, edge] of Object.entries(config.tlsEdges)) {
    const { ipRestriction, ...fields } = edge;
    report("tlsEdge", ["tlsEdges", name], fields);
    if (ipRestriction) {
      report("tlsEdgeIpRestriction", ["tlsEdges", name, "ipRestriction"], {
        ...ipRestriction,
        edgeId: PLACEHOLDER_EDGE_ID,
      });
    }
  }
  if (problems.length > 0) throw new EdgeConfigError(file, problems);
  return { file, ...config };
}

/** Reads, parses and validates an edge configuration file (named relative to the working directory in messages). */
export function loadEdgeConfig(file: string): Promise<EdgeConfig> {
  return parseEdgeConfig(readFileSync(file, "utf8"), relative(process.cwd(), file) || file);
}

/** `file:line:col` of the deepest node of `path` that exists in the document. */
function locate(doc: Document, lines: LineCounter, file: string, path: readonly PropertyKey[]): string {
  for (let n = path.length; n >= 0; n--) {
    const node = doc.getIn(path.slice(0, n), true);
    if (isNode(node) && node.range) {
      const { line, col } = lines.linePos(node.range[0]);
      return `${file}:${line}:${col}`;
    }
  }
  return file;
}
