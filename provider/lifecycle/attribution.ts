/**
 * Drift that names its author: when a refresh finds an object other than the state says, the
 * service's audit trail (`GET /audit_events`) tells who last changed each drifted field, and the
 * engine's output says so, one warning per drifted resource, one line per field, in the form
 * authorship.ts defines and `pulumi-edge drift` reads back:
 *
 *   route shop-r2: backend.backendId changed out of band at 2026-11-25T12:03:11Z by key "ops-console" (request op_…)
 *
 * A service without the trail (an older one: 404), or one the key may not ask, gives no
 * attribution and never an error: the drift itself is the engine's to show.
 */
import type { EdgeClient } from "../../sdk/client";
import { type AuditEvent, diffChanges } from "../../sdk/contract";
import { toCamel } from "../model/case";
import { type AuthorLabel, type AuthorLine, formatAuthorLine } from "./authorship";
import type { OperationContext } from "./types";

/** Events of one object looked at: the newest, which hold the last change of any field. */
const EVENTS_LOOKED_AT = 100;

/** Header maps: their keys are header names, kept as they are (see model/case). */
const VERBATIM_PARENTS = new Set(["request_headers.add", "response_headers.add"]);

/** A wire path (`backend.backend_id`) as the program names it (`backend.backendId`). */
export function camelPath(wire: string): string {
  const parts = wire.split(".");
  return parts
    .map((p, i) => (i >= 2 && VERBATIM_PARENTS.has(parts.slice(i - 2, i).join(".")) ? p : toCamel(p)))
    .join(".");
}

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

/** The newest events of `objectId`, or undefined when the service keeps no trail or may not tell. */
async function eventsOf(client: EdgeClient, objectId: string): Promise<AuditEvent[] | undefined> {
  try {
    return (await client.listAuditEvents({ objectId, limit: EVENTS_LOOKED_AT })).audit_events;
  } catch {
    // An older service (404), a key without read scope, a service gone: no attribution, no error.
    return undefined;
  }
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
  const events = await eventsOf(client, what.objectId);
  if (!events) return;
  const lines: string[] = [];
  for (const path of drifted) {
    const event = events.find((e) => Object.keys(e.changes).some((q) => concerns(q, path)));
    if (!event) continue;
    // A field the state did not have was created, not changed.
    const verb = gone.includes(path)
      ? "deleted"
      : added.includes(path) || changes[path]?.before === undefined
        ? "created"
        : "changed";
    lines.push(
      formatAuthorLine({
        label: what.label,
        name: nameOf(ctx, what.id),
        field: camelPath(path),
        verb,
        ...byWhom(event),
      }),
    );
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
  const own = (await eventsOf(client, what.objectId))?.find((e) => e.operation.startsWith("delete_"));
  const parent =
    own || what.parentId === undefined
      ? undefined
      : (await eventsOf(client, what.parentId))?.find((e) => e.operation.startsWith("delete_"));
  const event = own ?? parent;
  if (!event) return;
  ctx.log.warn(
    formatAuthorLine({
      label: what.label,
      name: nameOf(ctx, what.id),
      verb: "deleted",
      ...(own ? {} : { withEdge: what.parentId }),
      ...byWhom(event),
    }),
  );
}
