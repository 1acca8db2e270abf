/**
 * A stack's anchor: 256 random bits that the stack's own state keeps from its first update on, with
 * the place (./place) where that state lived when the anchor was made. A create's identity derives
 * from it (./index), so two stack instances never share identities, and one stack keeps them
 * across host names, logins, spellings of its backend's path and CI containers.
 *
 * Each run reads the anchor back from the state and decides, by one rule for both faces
 * (`judgeAnchor`), whether it still names this stack instance:
 * - recorded here: kept;
 * - recorded elsewhere: the state was copied or moved there (`stack export` / `stack import`);
 *   this is a new stack instance, and it takes a new anchor, so that it never takes the objects
 *   its original creates from then on. A move thereby loses only the recovery of a create lost
 *   just before it (which then conflicts and says so, or makes a new edge);
 * - not an anchor (an edited or damaged state): replaced;
 * - no place recorded, or none can be told now: kept (and the place recorded when it can be).
 */
import { randomBytes } from "node:crypto";
import { type Place, UnknownPlace } from "./place";

/** The key under which the anchor rides: a dynamic resource's input, the packaged provider's input. */
export const ANCHOR_KEY = "__anchor";
/** The key of the anchor's place, beside it (the packaged provider's input; StackAnchor's output `place`). */
export const PLACE_KEY = "__anchorPlace";
/** The type name of the dynamic resource that keeps a stack's anchor (`pulumi-nodejs:dynamic/edge:<it>`). */
export const STACK_ANCHOR = "StackAnchor";

/** An anchor as stored: 256 bits, base64url. */
export const isAnchor = (value: unknown): value is string =>
  typeof value === "string" && /^[A-Za-z0-9_-]{43}$/.test(value);

/** A new anchor's value. */
export const anchorValue = (): string => randomBytes(32).toString("base64url");

/** An anchor as the state keeps it. */
export interface AnchorRecord {
  anchor: string;
  /** Where the state lived when the anchor was made; absent where it could not be told. */
  place?: Place;
}

/** What a run does with the anchor its state holds (see the module's comment). */
export type AnchorVerdict =
  | { action: "keep"; record: AnchorRecord; changed: boolean }
  /** `why`: what the run says once, where the state held an anchor that no longer serves. */
  | { action: "new"; why?: string };

/**
 * The one rule: the anchor and place the state holds (`stored`, as read: anything), judged where
 * the state lives now (`here`). `changed` says that the record to keep differs from the stored one
 * (a place recorded for the first time).
 */
export function judgeAnchor(
  stored: { anchor?: unknown; place?: unknown },
  here: Place | UnknownPlace,
): AnchorVerdict {
  if (stored.anchor === undefined || stored.anchor === null) return { action: "new" };
  if (!isAnchor(stored.anchor)) {
    return {
      action: "new",
      why: `the stack's anchor in its state is not a valid anchor (edited or damaged: ${describe(stored.anchor)}): it is replaced by a new one, and a create lost before this run is not recovered by it`,
    };
  }
  const was = typeof stored.place === "string" && stored.place !== "" ? stored.place : undefined;
  if (here instanceof UnknownPlace) {
    return { action: "keep", record: { anchor: stored.anchor, place: was }, changed: false };
  }
  if (was === undefined)
    return { action: "keep", record: { anchor: stored.anchor, place: here }, changed: true };
  if (was === here) return { action: "keep", record: { anchor: stored.anchor, place: was }, changed: false };
  return {
    action: "new",
    why: `this stack's state was written at ${was} and now lives at ${here}: it is a copy or a move, so it takes an anchor of its own (objects it creates from now on are its own, never its original's; a create lost just before the move is not recovered)`,
  };
}

const describe = (value: unknown) => {
  const text = typeof value === "string" ? JSON.stringify(value) : typeof value;
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
};
