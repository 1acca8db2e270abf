/**
 * What a create does with an object that already existed: one an earlier create with this
 * resource's identity made (its answer lost, or its run killed), found by the service from the
 * create's keys (../identity).
 *
 * - Found by the identity the stack's own state anchors (proof: no other stack instance holds that
 *   anchor): it is this create's result, however old.
 * - Found by the identity derived from the environment (before the state anchors one): it is
 *   taken only when made within the recovery window, and the log says how it was found.
 *
 * Objects a create of this process answered with are remembered: when the engine then deletes
 * that same object in this run, it is the old resource of a forced replacement (`pulumi up
 * --replace`, `replacementTrigger`, `replaceWith`) whose create request did not change: the
 * exactly-once create answered with the object itself, so the replacement IS that object, and
 * deleting it would leave the new resource pointing at nothing. That delete is skipped.
 */
import { type CreateOptions, replayedBy } from "../../sdk/client";
import type { Replayed } from "../../sdk/contract";
import type { OperationContext } from "./types";

const held = new Set<string>();

/**
 * How long after its create an object may still be taken back by a create whose identity was
 * derived from the environment, not read from the stack's state. Within it, a first update
 * killed in fast mode (or a lost create of pulumi-edge 0.2.0) is recovered by the next run as the
 * standard commands make it (`pulumi cancel`, `pulumi up`). Past it, the provider cannot prove
 * that the object came from this stack instance rather than from another whose environment looks
 * the same (one host name, one backend path, one settings file), so it takes nothing silently:
 * the create fails, naming the object and the command that takes it on purpose. A day covers a
 * run killed in the evening and recovered the next morning; production objects, which a mistaken
 * twin stack would reach, are almost always older.
 */
export const RECOVERY_WINDOW_HOURS = 24;

/** How to take `id` into a stack on purpose, per face (for the messages below). */
export interface TakeOnPurpose {
  /** `pulumi import <type> <name> <id>`: the packaged provider's resource type token and import id. */
  importType: string;
  importId: string;
  /** What the dynamic resources offer instead (their engine cannot import). */
  dynamic: string;
}

/** The keys a create of this operation sends (see ../identity), `keyedOn` as the client takes it. */
export function createOptions(ctx: OperationContext | undefined, keyedOn?: unknown): CreateOptions {
  const id = ctx?.identity;
  return { identity: id?.identity, priorIdentity: id?.prior, keyedOn };
}

/** Whether an object found by a create's key `by` is proven this stack's (else: derived). */
const proven = (ctx: OperationContext | undefined, by: Replayed) =>
  by === "true" && ctx?.identity?.proven === true;

/**
 * Refuses to take back an object found by a derived identity (see `proven`) that was made longer
 * ago than the recovery window (RECOVERY_WINDOW_HOURS); `createdAt` is its RFC 3339 time.
 */
export function assertRecoverable(
  label: string,
  id: string,
  createdAt: string | undefined,
  take: TakeOnPurpose,
  now = Date.now(),
): void {
  const made = createdAt === undefined ? NaN : Date.parse(createdAt);
  if (Number.isNaN(made)) return; // nothing to tell its age by: the identity alone decides
  const hours = (now - made) / 3_600_000;
  if (hours <= RECOVERY_WINDOW_HOURS) return;
  throw new Error(
    `${label} ${id} was made ${hours >= 48 ? `${Math.floor(hours / 24)} days` : `${Math.floor(hours)} hours`} ago (${createdAt}) by a create with the identity this resource's environment gives (this stack's name, project, backend, settings file and host), longer ago than the ${RECOVERY_WINDOW_HOURS}-hour recovery window, and this stack's state does not record it: the provider cannot prove that this stack made it (another stack whose environment looks the same could have), so it takes nothing over. ` +
      `If it is this stack's, take it on purpose: \`pulumi import ${take.importType} <name> ${take.importId}\` (packaged provider), or ${take.dynamic}. ` +
      `If it is another stack's, leave it alone and give this resource another name or stack.`,
  );
}

/** Where a found object came from, for the log (see the module's comment). */
const DERIVED =
  "by the identity derived from this stack's name, backend, settings file and host, before this stack's state held its own (a first update killed in fast mode, a run of pulumi-edge 0.2.0, a first update of another plugin version, or a stack of this name removed with `pulumi stack rm --force`)";

/**
 * What a create found by key `by` may take: within the window when derived (assertRecoverable).
 * Returns how to say where it came from.
 */
export function takeFound(
  label: string,
  id: string,
  createdAt: string | undefined,
  by: Replayed,
  ctx: OperationContext | undefined,
  take: TakeOnPurpose,
): string {
  if (proven(ctx, by)) return "by this stack's own identity";
  assertRecoverable(label, id, createdAt, take);
  return DERIVED;
}

/** The creation time an answer carries, if it has one (edges and routes do, modules do not). */
const createdAtOf = (answer: object): string | undefined =>
  "created_at" in answer && typeof answer.created_at === "string" ? answer.created_at : undefined;

/**
 * Notes (and logs) a create's answer that is an existing object; returns the answer. One found by
 * a derived identity and older than the recovery window is refused (assertRecoverable).
 */
export function noteCreated<T extends object>(
  label: string,
  id: string,
  answer: T,
  ctx: OperationContext | undefined,
  take: TakeOnPurpose,
): T {
  const by = replayedBy(answer);
  if (by === undefined) return answer;
  if (proven(ctx, by)) {
    ctx?.log?.info(
      `${label} ${id} was made for this resource by an earlier create whose answer was lost (a failed or interrupted run): it is this create's result; nothing new was made`,
    );
  } else {
    assertRecoverable(label, id, createdAtOf(answer), take);
    ctx?.log?.info(
      `${label} ${id} was made for this resource by an earlier create that this stack's state does not record, found ${DERIVED}: it is this create's result; nothing new was made`,
    );
  }
  held.add(`${label}\n${id}`);
  return answer;
}

/**
 * Notes (and logs) an existing object taken over by this create: by `adopt: true`, or because an
 * earlier run made it for this resource (`why`).
 */
export function noteAdopted(label: string, id: string, ctx?: OperationContext, why = "adopt: true"): void {
  held.add(`${label}\n${id}`);
  ctx?.log?.info(`took over ${label} ${id} (${why}): brought to this resource's configuration in place`);
}

/** True (and logged) when a delete of `id` must be skipped: a create of this run answered with it. */
export function heldByCreate(label: string, id: string, ctx?: OperationContext): boolean {
  if (!held.has(`${label}\n${id}`)) return false;
  ctx?.log?.warn(
    `kept ${label} ${id}: it is also the replacement of this resource (the create request did not change, so the exactly-once create answered with the same object). For a new object, set \`deleteBeforeReplace: true\` on the resource, or change one of its inputs.`,
  );
  return true;
}
