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
 * - a place that cannot be told, then or now: see `judgeAnchor`.
 */
import { randomBytes } from "node:crypto";
import { type Place, UnknownPlace } from "./place";

/** The key under which the anchor rides: a dynamic resource's input, the packaged provider's input. */
export const ANCHOR_KEY = "__anchor";
/** The key of the anchor's place, beside it (the packaged provider's input; StackAnchor's output `place`). */
export const PLACE_KEY = "__anchorPlace";
/** The type name of the dynamic resource that keeps a stack's anchor (`pulumi-nodejs:dynamic/edge:<it>`). */
export const STACK_ANCHOR = "StackAnchor";
/** That resource's name: one per stack. */
export const STACK_ANCHOR_NAME = "pulumi-edge";
/**
 * The key of the stack's organization among a dynamic resource's inputs, where it names the
 * place (./place: a backend shared by organizations; absent on a file backend's default).
 */
export const ORGANIZATION_KEY = "__organization";

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
 * the state lives now (`here`). `changed` says that the record to keep differs from the stored one.
 *
 * A place that cannot be told (an encrypted login, no project file: `UnknownPlace`) never lets an
 * anchor pass in silence, and never lets one made elsewhere pass at all:
 * - recorded somewhere, unknown now: the state may have been copied since, so it takes a new anchor
 *   (recorded with no place), said once;
 * - recorded with no place (it was made where none could be told), known now: a copy made
 *   meanwhile could hold the same anchor, so this state takes one of its own, recorded here, said
 *   once; the next run keeps it;
 * - no place then, none now: kept (a new anchor every run would make every preview show a
 *   change), and `unknownPlace` says why a copy would not be told apart, and the fix.
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
    if (was === undefined) return { action: "keep", record: { anchor: stored.anchor }, changed: false };
    return {
      action: "new",
      why: `this stack's state was written at ${was}, and where it lives now cannot be told (${here.reason}): it may be a copy, so it takes an anchor of its own (a create lost before this run is not recovered). ${UNKNOWN_PLACE_FIX}`,
    };
  }
  if (was === here) return { action: "keep", record: { anchor: stored.anchor, place: was }, changed: false };
  if (was === undefined) {
    return {
      action: "new",
      why: `this stack's anchor was made where the state's place could not be told, and it now lives at ${here}: a copy made meanwhile could hold the same anchor, so this stack takes one of its own, recorded with its place (a create lost before this run is not recovered)`,
    };
  }
  return {
    action: "new",
    why: `this stack's state was written at ${was} and now lives at ${here}: it is a copy or a move, so it takes an anchor of its own (objects it creates from now on are its own, never its original's; a create lost just before the move is not recovered)`,
  };
}

/** How to make the place known: what every message about an unknown place ends with. */
export const UNKNOWN_PLACE_FIX =
  "To have copies of this state told apart from it, name the backend where the provider can read it: PULUMI_BACKEND_URL, or `backend.url` in the project file.";

/** What a run says (once) when it keeps an anchor whose place cannot be told, here or then. */
export const unknownPlace = (here: UnknownPlace): string =>
  `where this stack's state lives cannot be told (${here.reason}), so a copy of it (\`pulumi stack export\` / \`stack import\`) would not be told apart from it and could take its objects. ${UNKNOWN_PLACE_FIX}`;

const describe = (value: unknown) => {
  const text = typeof value === "string" ? JSON.stringify(value) : typeof value;
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
};
