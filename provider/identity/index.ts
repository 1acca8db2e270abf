/**
 * The identity a Pulumi resource's creates carry, so that a create is made exactly once across
 * runs: a later run of the same stack instance gives the same identity again, and the service
 * answers it with the object the lost create made (`CreateOptions.identity` of the client: the
 * `Idempotency-Key` is this identity with the request).
 *
 * **It is anchored in the stack's own state, and nowhere else.** The first update of a stack that
 * uses the provider gives it an anchor (./anchor), which the state keeps from then on: as inputs of
 * the packaged provider resource (see ../plugin), or as the output of one `StackAnchor` resource
 * that every dynamic resource takes as an input (see ../resources). A create's identity is the
 * SHA-256 of the anchor and the resource's URN. The environment is never asked who the stack is:
 * it only says where the state lives now (./place), so that a copy of the state is told from the
 * stack it came from.
 *
 * **The anchor must be in the state before a create that uses it is sent.** With checkpoints (the
 * default) the engine writes it there when the step that made it ends (the provider resource, or
 * the anchor every resource depends on), before any create that needs it. In fast mode
 * (`PULUMI_SKIP_CHECKPOINTS`) the engine writes nothing before the run's end, so a killed run's
 * new anchor would be lost with it, and its objects could not be found again: such creates are
 * refused (`assertAnchorKept`), and the stack's first update runs with checkpoints.
 *
 * Where the identity cannot help (a create lost by pulumi-edge 0.2.0, or before a resource moved
 * to another packaged provider resource), the objects' natural keys make the retry fail clearly,
 * naming the object and the command that takes it: a route's edge, match type and match; a TLS
 * edge's one IP restriction; an edge's hostports. No guess is made.
 */
import { createHash } from "node:crypto";

export {
  ANCHOR_KEY,
  type AnchorRecord,
  type AnchorVerdict,
  anchorValue,
  isAnchor,
  judgeAnchor,
  ORGANIZATION_KEY,
  PLACE_KEY,
  STACK_ANCHOR,
  STACK_ANCHOR_NAME,
  UNKNOWN_PLACE_FIX,
  unknownPlace,
} from "./anchor";
export { type Place, placeOf, surroundings, type Surroundings, UnknownPlace } from "./place";

/** The identity of `urn`'s creates in the stack whose state holds `anchor`. */
export function anchoredIdentity(anchor: string, urn: string): string {
  return createHash("sha256").update(`pulumi-edge create identity v3\n${anchor}\n${urn}`).digest("base64url");
}

/** `PULUMI_SKIP_CHECKPOINTS`, read as the CLI reads it. */
export const fastMode = (env: NodeJS.ProcessEnv): boolean => {
  const value = env.PULUMI_SKIP_CHECKPOINTS ?? "";
  return value === "1" || value.toLowerCase() === "true";
};

/**
 * Refuses a create whose anchor this run made (`bornThisRun`) in fast mode: the state that would
 * keep the anchor is written only at the run's end, so a killed run's objects could not be found.
 */
export function assertAnchorKept(bornThisRun: boolean, env: NodeJS.ProcessEnv): void {
  if (!bornThisRun || !fastMode(env)) return;
  throw new Error(
    "this update gives the stack a new anchor (its first update with pulumi-edge, or the first after its state was copied or moved), " +
      "and PULUMI_SKIP_CHECKPOINTS is set: the engine would save the anchor only at the end of the run, so if the run were killed, " +
      "the objects it had created could not be found again. Nothing was created. Run this one update with checkpoints " +
      "(unset PULUMI_SKIP_CHECKPOINTS); later updates may skip them again.",
  );
}
