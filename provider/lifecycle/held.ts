/**
 * What a create does with an object that already existed: one an earlier create with this
 * resource's identity made (../identity), which the service answers instead of making another.
 * The identity derives from the stack's own anchor and the resource's URN, so such an object is
 * this resource's, however old: a create whose answer was lost, a run killed mid-way, or a
 * backup restored since the stack last deleted it. It is taken, and the log says so.
 *
 * Objects a create of this process answered with are remembered (`HeldObjects`, one per provider
 * process): when the engine then deletes that same object in this run, it is the old resource of a
 * forced replacement (`pulumi up --replace`, `replacementTrigger`, `replaceWith`) whose create
 * request did not change: the exactly-once create answered with the object itself, so the
 * replacement IS that object, and deleting it would leave the new resource pointing at nothing.
 * That delete is skipped.
 */
import { wasReplayed } from "../../sdk/client";
import type { HeldSet, OperationContext } from "./types";

/** The objects creates of one provider process answered with (see the module's comment). */
export class HeldObjects implements HeldSet {
  private readonly held = new Set<string>();
  add(label: string, id: string): void {
    this.held.add(`${label}\n${id}`);
  }
  has(label: string, id: string): boolean {
    return this.held.has(`${label}\n${id}`);
  }
}

/** How to take an object into a stack on purpose, per face (for the messages of a conflict). */
export interface TakeOnPurpose {
  /** `pulumi import <type> <name> <id>`: the packaged provider's resource type token and import id. */
  importType: string;
  importId: string;
  /** What the dynamic resources offer instead (their engine cannot import). */
  dynamic: string;
}

/** The sentence that tells how to take `take`'s object on purpose, with `name` the resource's. */
export const takeItOnPurpose = (take: TakeOnPurpose, name: string | undefined): string =>
  `take it on purpose: \`pulumi import ${take.importType} ${name ?? "<name>"} ${take.importId}\` (packaged provider), or ${take.dynamic}`;

/** Where an object may be this stack's though this resource's identity did not make it. */
export const IF_THIS_STACKS =
  "a create pulumi-edge 0.2.0 lost, or one lost just before this resource moved to another provider resource or its state to another backend";

/**
 * What a conflict message knows of the object that holds a create's natural key (`what`, as
 * "this match on this edge"), though this resource's identity did not make it; it goes before
 * `takeItOnPurpose`. The provider cannot read the stack's state, so it says how to tell whether
 * the state holds the object (`held`, found by `grep`), and what fits each answer: never advice
 * that would take or delete an object another resource of the stack points at.
 */
export const notByThisIdentity = (held: { name: string; grep: string }, what: string): string =>
  `this resource's identity did not make it (it is no create of this resource that a run lost). ` +
  `If this stack's state holds ${held.name} (\`pulumi stack export | grep ${held.grep}\`), it is another resource's of this stack: ` +
  `where this update removes that resource, or an earlier update left it to be deleted, the engine deletes it only after this update's other steps ` +
  `(a resource renamed: give it \`aliases\` naming its old name instead, and nothing is made again), ` +
  `so run \`pulumi up --continue-on-error\` (its deletes then run though this step fails), then \`pulumi up\`; where the program still gives that resource ${what}, change one of the two. ` +
  `If not, and it is this stack's all the same (${IF_THIS_STACKS})`;

/** The keys a create of this operation sends (see ../identity), `keyedOn` as the client takes it. */
export function createOptions(ctx: OperationContext | undefined, keyedOn?: unknown) {
  return { identity: ctx?.identity, keyedOn };
}

/**
 * Notes (and logs) a create's answer that is an existing object, made by an earlier create with
 * this resource's identity; returns the answer.
 */
export function noteCreated<T extends object>(
  label: string,
  id: string,
  answer: T,
  ctx: OperationContext | undefined,
): T {
  if (!wasReplayed(answer)) return answer;
  ctx?.log?.info(
    `${label} ${id} already existed, made by an earlier create for this resource (found by this stack's identity for it, which this stack's state does not record: a run that failed or was interrupted after the create, or a backup restored since): it is this create's result; nothing new was made`,
  );
  ctx?.held?.add(label, id);
  return answer;
}

/**
 * Notes (and logs) an existing object taken over by this create: by `adopt: true`, or because an
 * earlier create for this resource made it (`why`).
 */
export function noteAdopted(label: string, id: string, ctx?: OperationContext, why = "adopt: true"): void {
  ctx?.held?.add(label, id);
  ctx?.log?.info(`took over ${label} ${id} (${why}): brought to this resource's configuration in place`);
}

/** True (and logged) when a delete of `id` must be skipped: a create of this run answered with it. */
export function heldByCreate(label: string, id: string, ctx?: OperationContext): boolean {
  if (!ctx?.held?.has(label, id)) return false;
  ctx.log?.warn(
    `kept ${label} ${id}: it is also the replacement of this resource (the create request did not change, so the exactly-once create answered with the same object). For a new object, set \`deleteBeforeReplace: true\` on the resource, or change one of its inputs.`,
  );
  return true;
}
