/**
 * What each Pulumi operation does for one resource type, independent of the face that serves
 * it (the dynamic resources, or the packaged plugin): the model's check, the plan as diff, and
 * create/read/update/delete through the typed client and the one plan executor. A face only
 * adapts: its own wire types in, these out.
 */
import type { EdgeClient } from "../../sdk/client";
import type { Checked } from "../model/check";
import type { Plan } from "../plan/types";
import type { AuthorLine, UnattributedLine } from "./authorship";
import type { ReleaseView } from "./releases";

export interface Created<O> {
  id: string;
  outs: O;
}

/** Where a face sends what a resource's operation has to say (the engine's log, for that resource). */
export interface ResourceLog {
  info(message: string): void;
  warn(message: string): void;
}

/** The objects a provider process's creates answered with (see ./held, `HeldObjects`). */
export interface HeldSet {
  add(label: string, id: string): void;
  has(label: string, id: string): boolean;
}

/** What a face knows of the operation beyond its inputs. */
export interface OperationContext {
  /**
   * Create only: the identity of the resource asking (provider/identity): the create is made once
   * for it, whatever was lost in this run or an earlier one.
   */
  identity?: string;
  /** The objects this provider process's creates answered with (./held): a replacement's delete skips them. */
  held?: HeldSet;
  /**
   * The objects this run gives up a natural key of (./releases): a create that meets one waits
   * for it; an update or delete settles its object.
   */
  releases?: ReleaseView;
  /** The engine's log for this resource. */
  log?: ResourceLog;
  /** The resource's name (the last part of its URN), when the face knows it: what warnings call it. */
  name?: string;
  /**
   * Read only: the `Request-Id` of the stack's last change to the object, as its state keeps it
   * (LAST_WRITE_KEY of ./attribution): where the audit trail that a refresh reads starts.
   */
  lastWrite?: string;
  /**
   * Read only: each authorship line a refresh warns, also handed over as a value, so a caller in
   * this process (the drift command's fast path) has the authors without parsing its own text.
   */
  attribution?: AttributionSink;
}

/** Who made a drift, as a read's attribution finds it: an author, or why none is provable. */
export interface AttributionSink {
  author(line: AuthorLine): void;
  unattributed(line: UnattributedLine): void;
}

export interface Read<I, O> {
  id: string;
  outs: O;
  /** The canonical inputs that would produce `outs`: stored so the next diff compares with them. */
  inputs: I;
}

/**
 * A check's answer for the engine: the brain's value encoded as Pulumi inputs; when it failed,
 * the inputs as given (the engine only shows the failures, and encoding garbage could throw).
 */
export function encodeChecked<C, I>(
  checked: Checked<C>,
  news: unknown,
  encode: (config: C) => I,
): Checked<I> {
  if (checked.failures.length > 0) return { inputs: checkedInputs<I>(news), failures: checked.failures };
  return { inputs: encode(checked.inputs), failures: [] };
}

/**
 * Inputs as the engine hands them to diff, create and update: what this lifecycle's check
 * answered, kept by the engine as they were (or, when it failed, what the program gave: the
 * engine then stops before any of these). Trusted, not parsed again: a call parses once, at its
 * entry, and these were parsed by the check. The one place a face's untyped inputs become typed.
 */
export const checkedInputs = <I>(news: unknown): I => news as I;

/**
 * Where a read finds an object: the edge whose `GET` answers it (an HTTPS edge's carries its routes,
 * a TLS edge's its IP restriction), and the route's id for a route. What a batch of reads (the fast
 * drift check) fetches once per edge.
 */
export interface Location {
  edge: "https" | "tls";
  edgeId: string;
  routeId?: string;
}

export interface Lifecycle<I, O, F = unknown> {
  /** Program inputs → canonical inputs, or failures by property path. No I/O. */
  check(news: unknown, olds?: unknown): Checked<I>;
  /** Stored state (outputs or old inputs of any version) → the plan to reach `news`. No I/O. */
  diff(stored: unknown, news: I, id?: string): Plan;
  create(client: EdgeClient, inputs: I, ctx?: OperationContext): Promise<Created<O>>;
  /**
   * The object as it is now; undefined when it is gone. `stored` may be empty (an import by id
   * alone): the id then carries what is needed (see each resource's id form).
   */
  read(
    client: EdgeClient,
    id: string,
    stored: unknown,
    ctx?: OperationContext,
  ): Promise<Read<I, O> | undefined>;
  /** Where `read` finds the object of `id` (see Location). */
  locate(id: string, stored: unknown): Location;
  /**
   * What `read` answers of the object it found (`found`; undefined: gone), already fetched: a
   * refresh's judgment, once, for `read` and for a batch of reads.
   */
  readFound(
    client: EdgeClient,
    id: string,
    stored: unknown,
    found: F | undefined,
    ctx?: OperationContext,
  ): Promise<Read<I, O> | undefined>;
  update(client: EdgeClient, id: string, stored: unknown, news: I, ctx?: OperationContext): Promise<O>;
  delete(client: EdgeClient, id: string, stored: unknown, ctx?: OperationContext): Promise<void>;
}
