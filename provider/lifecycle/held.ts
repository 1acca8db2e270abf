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

/** Notes (and logs) a create's answer that is an existing object; returns the answer. */
export function noteCreated<T extends object>(
  label: string,
  id: string,
  answer: T,
  ctx?: OperationContext,
): T {
  if (wasReplayed(answer)) {
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
