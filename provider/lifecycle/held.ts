/**
 * Objects that a create in this process answered with an object that already existed: one an
 * earlier create with the same identity and request made (its answer lost, or its run killed).
 *
 * When the engine then deletes that same object in this run, it is the old resource of a forced
 * replacement (`pulumi up --replace`, `replacementTrigger`, `replaceWith`) whose create request did
 * not change: the exactly-once create answered with the object itself, so the replacement IS that
 * object, and deleting it would leave the new resource pointing at nothing. That delete is skipped.
 */
import { wasReplayed } from "../../sdk/client";
import type { OperationContext } from "./types";

const held = new Set<string>();

/**
 * How long after its create an object may still be taken back by a create carrying its identity.
 * Within it, a create whose answer was lost (a dropped connection, a killed run) is recovered by
 * the next run as the standard commands make it (`pulumi cancel`, `pulumi up`). Past it, the
 * provider cannot prove that the object came from this stack instance rather than from another
 * with the same identity (../identity: Pulumi Cloud stacks of two organizations), so it takes
 * nothing silently: the create fails, naming the object and the command that takes it on
 * purpose. A day covers a run killed in the evening and recovered the next morning; production
 * objects, which a mistaken twin stack would reach, are almost always older.
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

/**
 * Refuses to take back an object that a create with this resource's identity made longer ago than
 * the recovery window (see RECOVERY_WINDOW_HOURS); `createdAt` is the object's RFC 3339 time.
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
    `${label} ${id} was made ${hours >= 48 ? `${Math.floor(hours / 24)} days` : `${Math.floor(hours)} hours`} ago (${createdAt}) by a create with this resource's identity, ` +
      `longer ago than the ${RECOVERY_WINDOW_HOURS}-hour recovery window: the provider cannot prove that it was made by this stack (another stack with the same project, stack name and settings could have made it), so it takes nothing over. ` +
      `If it is this stack's, take it on purpose: \`pulumi import ${take.importType} <name> ${take.importId}\` (packaged provider), or ${take.dynamic}. ` +
      `If it is another stack's, leave it alone and give this resource another name or stack.`,
  );
}

/** The creation time an answer carries, if it has one (edges and routes do, modules do not). */
const createdAtOf = (answer: object): string | undefined =>
  "created_at" in answer && typeof answer.created_at === "string" ? answer.created_at : undefined;

/**
 * Notes (and logs) a create's answer that is an existing object; returns the answer. An existing
 * object older than the recovery window is refused (assertRecoverable).
 */
export function noteCreated<T extends object>(
  label: string,
  id: string,
  answer: T,
  ctx: OperationContext | undefined,
  take: TakeOnPurpose,
): T {
  if (wasReplayed(answer)) {
    assertRecoverable(label, id, createdAtOf(answer), take);
    held.add(`${label}\n${id}`);
    ctx?.log?.info(
      `${label} ${id} was made for this resource by an earlier create whose answer was lost (a failed or interrupted run): it is this create's result; nothing new was made`,
    );
  }
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
