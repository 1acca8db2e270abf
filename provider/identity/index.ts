/**
 * The identity a Pulumi resource's creates carry, so that a create is made exactly once across
 * runs: a later run of the same stack instance gives the same identity again, and the service
 * answers it with the object the lost create made (`CreateOptions.identity` of the client: the
 * `Idempotency-Key` is this identity with the request).
 *
 * **It is anchored in the stack's own state.** The first update of a stack that uses the provider
 * gives it an *anchor*, 256 random bits, which the state keeps from then on: as an input of the
 * packaged provider resource (see ../plugin), or as the output of one `StackAnchor` resource that
 * every dynamic resource takes as an input (see ../resources). A create's identity is the SHA-256
 * of the anchor and the resource's URN. Two stack instances never share an anchor, whatever their
 * environments have in common (two dev containers with equal backend paths and one committed
 * settings file; a stack removed with `stack rm --force` and made again), and one stack keeps its
 * anchor whatever changes around it (the host name of a CI retry, the spelling of the backend's
 * path, the login): the state says which stack this is; the environment is never asked.
 *
 * **Before the state holds an anchor** (the run that gives it one), the environment is the only
 * witness, and a guess (./instance: the backend as the CLI resolves it, the settings file's salt,
 * this host): the *derived* identity, the formula of pulumi-edge 0.2.0.
 * - With checkpoints (the default), the engine writes the new anchor into the state before any
 *   create that uses it is sent (a provider resource, or the anchor resource every other depends
 *   on, is saved when its step ends), so the run's creates carry the anchored identity: a killed
 *   run's retry finds them by the anchor it then reads. They also name the derived identity as
 *   `prior`: an object made under it (a first update killed in fast mode; a 0.2.0 run; a plugin
 *   version's first update, whose default provider is a new resource) is answered and re-keyed.
 * - In fast mode (`PULUMI_SKIP_CHECKPOINTS`) the engine writes nothing before the run's end, so a
 *   killed run's anchor is lost with it: that run's creates carry the derived identity itself, so
 *   that the retry, which derives it again, finds them.
 * Derived matches are not proof (two machines with one host name and one backend path look
 * alike), so the lifecycles take them only within the recovery window (../lifecycle/held) and say
 * that they were derived. Where the environment cannot be read (`UnknownInstance`) nothing is
 * derived, and nothing is ever taken over on its strength.
 */
import { createHash, randomBytes } from "node:crypto";
import { deriveInstance, type StackInstance, UnknownInstance } from "./instance";

/** The key under which the anchor rides: a dynamic resource's input, the packaged provider's input. */
export const ANCHOR_KEY = "__anchor";
/** The type name of the dynamic resource that keeps a stack's anchor (`pulumi-nodejs:dynamic/edge:<it>`). */
export const STACK_ANCHOR = "StackAnchor";

/** An anchor as stored: 256 bits, base64url. */
export const isAnchor = (value: unknown): value is string =>
  typeof value === "string" && /^[A-Za-z0-9_-]{43}$/.test(value);

/** Anchors made by this process: a run whose anchor is one of them is that stack's first. */
const bornHere = new Set<string>();

/** A new anchor, for a stack whose state has none yet. */
export function newAnchor(): string {
  const anchor = randomBytes(32).toString("base64url");
  bornHere.add(anchor);
  return anchor;
}

/** What a create tells the service about who asks (see the module's comment). */
export interface CreateIdentity {
  /** What the create's `Idempotency-Key` is derived from. */
  identity: string;
  /** An identity an earlier create of this resource may have used: its object is answered too. */
  prior?: string;
  /** Whether `identity` comes from the stack's state (proof) or from the environment (a guess). */
  proven: boolean;
  /** Said once per process where the guess cannot be made at all. */
  warning?: string;
}

/** The stack name of a URN: `urn:pulumi:<stack>::<project>::<type>::<name>`. */
function stackOfUrn(urn: string): string {
  const match = /^urn:pulumi:([^:]+)::/.exec(urn);
  if (!match?.[1]) throw new Error(`not a Pulumi URN: ${urn}`);
  return match[1];
}

/** The identity of a create by `urn` in a stack whose anchor is `anchor` (undefined: no anchor known). */
export function createIdentityOf(
  urn: string,
  anchor: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  instance: StackInstance | UnknownInstance = instanceOf(stackOfUrn(urn)),
): CreateIdentity {
  const derived = instance instanceof UnknownInstance ? undefined : derivedIdentity(urn, instance);
  const warning =
    instance instanceof UnknownInstance
      ? `cannot tell which backend holds this stack (${instance.reason}): a create lost before this stack's state holds its anchor is not recovered, and nothing is taken over without proof`
      : undefined;
  if (anchor === undefined) {
    // No anchor at all (neither face gets here): the guess, else a create made once in this run.
    return { identity: derived ?? randomBytes(32).toString("base64url"), proven: false, warning };
  }
  const anchored = anchoredIdentity(anchor, urn);
  if (!bornHere.has(anchor)) return { identity: anchored, proven: true };
  if (fastMode(env) && derived !== undefined) return { identity: derived, proven: false };
  return { identity: anchored, prior: derived, proven: true, warning };
}

/** `PULUMI_SKIP_CHECKPOINTS`, read as the CLI reads it. */
const fastMode = (env: NodeJS.ProcessEnv) => {
  const value = env.PULUMI_SKIP_CHECKPOINTS ?? "";
  return value === "1" || value.toLowerCase() === "true";
};

const instances = new Map<string, StackInstance | UnknownInstance>();

/** The environment's guess at the instance of stack `stack`, read once per process. */
function instanceOf(stack: string): StackInstance | UnknownInstance {
  let instance = instances.get(stack);
  if (instance === undefined) {
    instance = deriveInstance(stack);
    instances.set(stack, instance);
  }
  return instance;
}

/** The identity of `urn` in the stack whose state holds `anchor`. */
export function anchoredIdentity(anchor: string, urn: string): string {
  return digest(`pulumi-edge create identity v3\n${anchor}\n${urn}`);
}

/** The identity of `urn` as the environment guesses its stack instance (pulumi-edge 0.2.0's, unchanged). */
export function derivedIdentity(urn: string, instance: StackInstance): string {
  return digest(`pulumi-edge create identity v2\n${instance.backend}\n${instance.salt}\n${urn}`);
}

const digest = (text: string) => createHash("sha256").update(text).digest("base64url");
