/**
 * The audit trail (`GET /audit_events`): one event per change the service made, written in the
 * change's own transaction, so "who changed it, when?" has an answer (drift attribution reads it).
 */
import { z } from "zod";
import { mapPaths, SECRET_REDACTED } from "./modules";
import { keptText } from "./text";
import { pageQuerySchema } from "./wire";

/** What an event is about: the object the change touched. */
export const AUDIT_OBJECT_KINDS = [
  "https_edge",
  "tls_edge",
  "route",
  "tls_ip_restriction",
  "api_key",
] as const;
export type AuditObjectKind = (typeof AUDIT_OBJECT_KINDS)[number];

/** What replaces a secret leaf's value in an event: the fact that it changed is kept, never the value. */
export const AUDIT_REDACTED = SECRET_REDACTED;
/** What replaces values that did not fit in an event (see AUDIT_EVENT_MAX_BYTES). */
export const AUDIT_TRUNCATED = "[truncated]";
/** Bound on the changes of one event, in bytes of JSON: past it values are left out, then fields (`truncated`). */
export const AUDIT_EVENT_MAX_BYTES = 16 * 1024;

/** One changed field: its value before and after (absent: the field did not exist on that side). */
export const auditChangeSchema = z.strictObject({
  before: z.unknown().optional(),
  after: z.unknown().optional(),
});
export type AuditChange = z.output<typeof auditChangeSchema>;

export const auditEventSchema = z.strictObject({
  id: z.string().describe("The event's id (`aud_<n>`), for `before_id`."),
  time: z.string().describe("When the change committed (RFC 3339, UTC)."),
  operation: z
    .string()
    .describe(
      "The OpenAPI operationId of the change (`update_route`), or `create_api_key`/`revoke_api_key` for `edge-service keys`.",
    ),
  object_kind: z.enum(AUDIT_OBJECT_KINDS),
  object_id: z
    .string()
    .describe("The object changed (a TLS IP restriction's is its edge's; a key's, its name)."),
  edge_id: z.string().nullable().describe("The route's HTTPS edge (routes only)."),
  key: z
    .string()
    .nullable()
    .describe(
      "The name of the API key of the request (`bootstrap` for the key the service was started with; never the key); null on a service without keys and for `edge-service keys`.",
    ),
  request_id: z
    .string()
    .nullable()
    .describe("The `Request-Id` of the request; null for `edge-service keys`."),
  changes: z
    .record(z.string(), auditChangeSchema)
    .describe(
      "The changed fields by dotted wire path (`backend.backend_id`), before and after; secret leaves read `[redacted]`.",
    ),
  truncated: z
    .boolean()
    .describe(
      `The changed fields did not fit in ${AUDIT_EVENT_MAX_BYTES} bytes even with every value left out: some changed fields are not listed (the event may have changed any field). Values left out to fit read "[truncated]", their fields still listed.`,
    ),
});
export type AuditEvent = z.output<typeof auditEventSchema>;

export const auditEventListSchema = z.strictObject({
  audit_events: z.array(auditEventSchema),
  uri: z.string(),
  next_page_uri: z.string().nullable(),
});
export type AuditEventList = z.output<typeof auditEventListSchema>;

/** `GET /audit_events`: the page parameters, and filters. */
export const auditQuerySchema = pageQuerySchema.extend({
  object_id: keptText()
    .regex(/^[A-Za-z0-9._-]{1,64}$/, { error: "must be an object id (or a key name)" })
    .optional()
    .describe("Only the events of this object (an edge's, a route's, a key's name)."),
  since: keptText()
    .refine((s) => !Number.isNaN(Date.parse(s)) && /^\d{4}-\d\d-\d\dT/.test(s), {
      error: "must be an RFC 3339 time, e.g. 2026-11-25T12:00:00Z",
    })
    .optional()
    .describe("Only the events at or after this time (RFC 3339)."),
  key: keptText()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/, { error: "must be an API key's name" })
    .optional()
    .describe("Only the changes made with the API key of this name."),
});
export type AuditQuery = z.output<typeof auditQuerySchema>;

// ---------------------------------------------------------------- the diff of a change

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

type Leaves = Map<string, { path: string[]; value: unknown }>;

/**
 * The leaves of a value by dotted path: objects are walked, anything else (arrays, scalars,
 * null) is a leaf. An empty object is a leaf too, so a module configured with no fields shows.
 *
 * `other` is the other image's value at the same path: where both hold the very same value (the
 * same object: a PATCH keeps every module it does not name), their leaves are the same on both
 * sides and can be no change, so that subtree is not walked at all (a PATCH of one module of a
 * route walks that module, not the route). `at` is the path walked so far, one array pushed and
 * popped along the walk (copied only for a leaf: a write's audit diff runs on every write).
 */
function leaves(value: unknown, other: unknown, dotted: string, at: string[], out: Leaves): void {
  if (isObject(value)) {
    const keys = Object.keys(value);
    if (keys.length > 0) {
      const beside = isObject(other) ? other : undefined;
      for (const k of keys) {
        const v = value[k];
        const o = beside !== undefined && Object.hasOwn(beside, k) ? beside[k] : undefined;
        if (v === o) continue; // the same on both sides (or absent from both)
        at.push(k);
        leaves(v, o, dotted === "" ? k : `${dotted}.${k}`, at, out);
        at.pop();
      }
      return;
    }
  }
  if (value !== undefined && at.length > 0) out.set(dotted, { path: at.slice(), value });
}

/** Leaves are scalars, arrays or empty objects: scalars are equal only when identical. */
const same = (a: unknown, b: unknown): boolean =>
  a === b ||
  (typeof a === "object" &&
    a !== null &&
    typeof b === "object" &&
    b !== null &&
    JSON.stringify(a) === JSON.stringify(b));

/** Whether `path` is at or under the secret path `secret` ("*" matches any key). */
const under = (path: readonly string[], secret: readonly string[]): boolean =>
  path.length >= secret.length && secret.every((s, i) => s === "*" || s === path[i]);
/** Whether `path` is strictly above the secret path `secret`. */
const above = (path: readonly string[], secret: readonly string[]): boolean =>
  path.length < secret.length && path.every((p, i) => secret[i] === "*" || secret[i] === p);

/** A changed value with the secrets it holds (or is) replaced by the marker. */
function redact(path: readonly string[], value: unknown, secrets: readonly (readonly string[])[]): unknown {
  let out = value;
  for (const s of secrets) {
    if (s[0] !== "*" && s[0] !== path[0]) continue; // another module's secret: most leaves, at once
    if (under(path, s)) return AUDIT_REDACTED;
    if (above(path, s)) out = mapPaths(out, [s.slice(path.length)], () => AUDIT_REDACTED, { whole: true });
  }
  return out;
}

/**
 * The fields that differ between two images of an object (wire names, snake_case), leaf by leaf:
 * before/after per changed path, a side absent where the field did not exist. Values along
 * `secrets` (the contract's ROUTE_SECRET_PATHS for a route) read AUDIT_REDACTED: the change shows,
 * the value never does.
 */
export function diffChanges(
  before: Record<string, unknown> | undefined,
  after: Record<string, unknown> | undefined,
  secrets: readonly (readonly string[])[] = [],
): Record<string, AuditChange> {
  const was: Leaves = new Map();
  const is: Leaves = new Map();
  leaves(before, after, "", [], was);
  leaves(after, before, "", [], is);
  const changes: Record<string, AuditChange> = {};
  // The paths before, in their order, then those only after.
  for (const [key, b] of was) {
    const a = is.get(key);
    if (a === undefined) changes[key] = { before: redact(b.path, b.value, secrets) };
    else if (!same(b.value, a.value)) {
      changes[key] = { before: redact(a.path, b.value, secrets), after: redact(a.path, a.value, secrets) };
    }
  }
  for (const [key, a] of is) {
    if (!was.has(key)) changes[key] = { after: redact(a.path, a.value, secrets) };
  }
  return changes;
}
