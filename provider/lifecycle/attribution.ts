/**
 * Drift that names its author: when a refresh finds an object other than the state says, the
 * service's audit trail (`GET /audit_events`) tells who last changed each drifted field, and the
 * engine's output says so, one warning per drifted resource, one line per field, in the form
 * authorship.ts defines and `pulumi-edge drift` reads back:
 *
 *   route shop-r2: backend.backendId changed out of band at 2026-11-25T12:03:11Z by key "ops-console" (request op_…)
 *
 * Only events since the stack's last write to the object count (the state keeps that write's
 * `Request-Id`, LAST_WRITE_KEY; every page of them is read, newest first): the author of a drift is
 * the newest of them that changed the field, and only when nothing newer may have changed it
 * unseen. An event that lists only some of its fields (`truncated`), a trail too long to read, or
 * an event whose recorded value is not the value found, make the author unknown: no line, never
 * another key.
 *
 * A trail that ends without reaching the stack's write proves nothing about any event in it: a
 * store restored from a backup holds events older than that write (the stack's own create among
 * them, which set the value the restore brought back), retention pruning leaves newer ones, and
 * nothing in an event tells the two apart. So then no key is named, and the line says why
 * (authorship.ts: "author unknown: the service's history does not reach the stack's last change
 * (request …): restored or pruned?"), for each drifted field and for an object found gone.
 *
 * A service without the trail (an older one: 404), or one the key may not ask, gives no
 * attribution and never an error: the drift itself is the engine's to show.
 */
import type { EdgeClient } from "../../sdk/client";
import {
  AUDIT_TRUNCATED,
  type AuditEvent,
  diffChanges,
  mapPaths,
  ROUTE_SECRET_PATHS,
  SECRET_REDACTED,
} from "../../sdk/contract";
import { deepEqual } from "../model/canonical";
import { camelPath as camelSegments } from "../model/case";
import {
  type AuthorLabel,
  type AuthorLine,
  type AuthorVerb,
  formatAuthorLine,
  formatUnattributedLine,
} from "./authorship";
import type { OperationContext } from "./types";

/**
 * Where a resource's state keeps the `Request-Id` of the stack's last change to its object (an
 * output the faces add and carry; not part of the schema): where attribution stops reading.
 */
export const LAST_WRITE_KEY = "__lastWrite";

/** Events per page; and the most read for one object (past it: unknown). */
const PAGE = 100;
const MOST_EVENTS = 10_000;

/** A wire path (`backend.backend_id`) as the program names it (`backend.backendId`), header names as they are. */
export const camelPath = (wire: string): string => camelSegments(wire.split(".")).join(".");

/** Whether an event's changed path `q` concerns the drifted path `p` (the same, or one under the other). */
const concerns = (q: string, p: string) => q === p || q.startsWith(`${p}.`) || p.startsWith(`${q}.`);

/** RFC 3339 to the second: what the line shows (the event keeps milliseconds). */
const secondsOf = (time: string) => time.replace(/\.\d+Z$/, "Z");

/** Who and when, as every line ends: the event's time, key and request. */
const byWhom = (e: AuditEvent): Pick<AuthorLine, "at" | "key" | "request"> => ({
  at: secondsOf(e.time),
  key: e.key ?? "(none)",
  request: e.request_id ?? "(none)",
});

/** The resource's name: the last part of its URN, else its id. */
const nameOf = (ctx: OperationContext | undefined, id: string) => ctx?.name ?? id;

/**
 * An object's trail since the stack's last write to it, as eventsSince reads it.
 * - `complete`: read back to that write (without one: to the trail's beginning); only then does
 *   every event in it follow the stack's write, so only then may one be named as an author.
 * - `unreached`: the trail ended without that write (its request id): restored or pruned.
 * Neither: too long to read (MOST_EVENTS).
 */
export interface Trail {
  /** Newest first: since the stack's write when complete, else every event read. */
  events: AuditEvent[];
  complete: boolean;
  unreached?: string;
}

/**
 * The events of `objectId` since the stack's last write to it (`since`: that write's request id;
 * none: the whole trail), newest first. Undefined when the service keeps no trail or may not tell.
 */
export async function eventsSince(
  client: EdgeClient,
  objectId: string,
  since: string | undefined,
): Promise<Trail | undefined> {
  const events: AuditEvent[] = [];
  let beforeId: string | undefined;
  try {
    while (events.length < MOST_EVENTS) {
      const page = await client.listAuditEvents({ objectId, limit: PAGE, beforeId });
      for (const e of page.audit_events) {
        if (since !== undefined && e.request_id === since) return { events, complete: true };
        events.push(e);
      }
      const last = page.audit_events.at(-1);
      if (page.next_page_uri === null || last === undefined)
        return since === undefined
          ? { events, complete: true }
          : { events, complete: false, unreached: since };
      beforeId = last.id;
    }
    return { events, complete: false };
  } catch {
    // An older service (404), a key without read scope, a service gone: no attribution, no error.
    return undefined;
  }
}

/** The value at a dotted wire path of an object image, if any. */
function valueAt(image: Record<string, unknown>, path: string): unknown {
  let v: unknown = image;
  for (const part of path.split(".")) {
    if (typeof v !== "object" || v === null) return undefined;
    v = Reflect.get(v, part);
  }
  return v;
}

/**
 * The event that made the value of `path` found in `now`: the newest that changed it, unless an
 * event that may have changed it unseen comes first (truncated), or the value it recorded is not
 * the one found (a change the trail missed). Undefined: unknown.
 */
export function authorOf(
  events: readonly AuditEvent[],
  path: string,
  now: Record<string, unknown>,
): AuditEvent | undefined {
  for (const e of events) {
    if (e.truncated) return undefined;
    const hit = Object.keys(e.changes).find((q) => concerns(q, path));
    if (hit === undefined) continue;
    const change = e.changes[hit];
    if (hit === path && change !== undefined) {
      const recorded = "after" in change ? change.after : undefined;
      const known = recorded !== AUDIT_TRUNCATED && recorded !== SECRET_REDACTED;
      if (known && !deepEqual(recorded, valueAt(now, path))) return undefined;
    }
    return e;
  }
  return undefined;
}

/**
 * Tells the engine who changed the fields that differ between `stored` (the state's
 * configuration, wire names) and `now` (the object as read), when any do. `label` is the kind as
 * the lifecycles name it (`route`, `HTTPS edge`, `TLS edge`, `IP restriction of TLS edge`).
 */
export async function attributeDrift(
  client: EdgeClient,
  ctx: OperationContext | undefined,
  what: { label: AuthorLabel; id: string; objectId: string },
  stored: Record<string, unknown>,
  now: Record<string, unknown>,
): Promise<void> {
  if (!ctx?.log) return;
  const changes = diffChanges(stored, now);
  const paths = Object.keys(changes);
  if (paths.length === 0) return;
  // A module (a top-level object) gone or added whole is one line: who deleted or created it.
  const isModule = (v: unknown) => typeof v === "object" && v !== null;
  const gone = Object.keys(stored).filter((k) => now[k] === undefined && isModule(stored[k]));
  const added = Object.keys(now).filter((k) => stored[k] === undefined && isModule(now[k]));
  const whole = [...gone, ...added];
  // An empty module is a leaf of its own path: one line for it, not two.
  const drifted = [...whole, ...paths.filter((p) => !whole.some((g) => p === g || p.startsWith(`${g}.`)))];
  const trail = await eventsSince(client, what.objectId, ctx.lastWrite);
  if (!trail || (!trail.complete && trail.unreached === undefined)) return;
  const lines: string[] = [];
  for (const path of drifted) {
    // A field the state did not have was created, not changed.
    const verb: AuthorVerb = gone.includes(path)
      ? "deleted"
      : added.includes(path) || changes[path]?.before === undefined
        ? "created"
        : "changed";
    const line = { label: what.label, name: nameOf(ctx, what.id), field: camelPath(path), verb };
    if (trail.unreached !== undefined) {
      const unattributed = { ...line, since: trail.unreached };
      ctx.attribution?.unattributed(unattributed);
      lines.push(formatUnattributedLine(unattributed));
      continue;
    }
    const event = authorOf(trail.events, path, now);
    if (event) {
      const author = { ...line, ...byWhom(event) };
      ctx.attribution?.author(author);
      lines.push(formatAuthorLine(author));
    }
  }
  if (lines.length > 0) ctx.log.warn(lines.join("\n"));
}

/**
 * Tells the engine who deleted an object a refresh found gone: its own delete, or (a route) the
 * delete of its edge, which took its routes with it.
 */
export async function attributeDeletion(
  client: EdgeClient,
  ctx: OperationContext | undefined,
  what: { label: AuthorLabel; id: string; objectId: string; parentId?: string },
): Promise<void> {
  if (!ctx?.log) return;
  // A delete is its object's last event. It is proof even where the trail does not reach the
  // stack's write: ids are never reused, so the object the stack wrote existed until that delete.
  const deleteOf = (trail: Trail | undefined) => {
    const newest = trail?.events[0];
    return newest?.operation.startsWith("delete_") ? newest : undefined;
  };
  const trail = await eventsSince(client, what.objectId, ctx.lastWrite);
  const own = deleteOf(trail);
  const parent =
    own || what.parentId === undefined
      ? undefined
      : deleteOf(await eventsSince(client, what.parentId, undefined));
  const line = { label: what.label, name: nameOf(ctx, what.id), verb: "deleted" as const };
  const event = own ?? parent;
  if (event) {
    const author = { ...line, ...(own ? {} : { withEdge: what.parentId }), ...byWhom(event) };
    ctx.attribution?.author(author);
    ctx.log.warn(formatAuthorLine(author));
  } else if (trail?.unreached !== undefined) {
    const unattributed = { ...line, since: trail.unreached };
    ctx.attribution?.unattributed(unattributed);
    ctx.log.warn(formatUnattributedLine(unattributed));
  }
}

/**
 * The secret leaves of a route answered redacted (a `read` key may not see them) that the trail
 * says changed since the stack's last write: the others are what the state holds. Without the
 * stack's write in the state (a state of 0.2.0), or a trail, none are said changed: a read key
 * must not make drift out of values it cannot see. A trail that does not reach the stack's write
 * counts every event it holds: after pruning they all follow that write, and after a restore
 * the restore may have brought back an older secret, which only a write puts right.
 */
export async function secretsChangedSince(
  client: EdgeClient,
  ctx: OperationContext | undefined,
  routeId: string,
  redacted: readonly string[],
): Promise<string[]> {
  if (redacted.length === 0 || ctx?.lastWrite === undefined) return [];
  const trail = await eventsSince(client, routeId, ctx.lastWrite);
  if (!trail) return [];
  return redacted.filter((path) =>
    trail.events.some((e) => Object.keys(e.changes).some((q) => concerns(q, path))),
  );
}

/** The wire paths of a route's secret leaves that hold SECRET_REDACTED (ROUTE_SECRET_PATHS, expanded). */
export function redactedSecretPaths(route: Record<string, unknown>): string[] {
  const out: string[] = [];
  mapPaths(route, ROUTE_SECRET_PATHS, (leaf, at) => {
    if (leaf === SECRET_REDACTED) out.push(at.join("."));
    return leaf;
  });
  return out;
}
