/**
 * Natural keys given up within one run. A hostport belongs to one edge at a time, a match to one
 * route of an edge; a program that moves one between two of its resources in one update (edge
 * `one` gives up `m:443` and a new edge `two` takes it; route `a` changes its match and a new route
 * takes the old one) would meet its own old object if the create ran first, and the engine orders
 * nothing between two independent resources.
 *
 * So the run's diffs announce the objects that give up a natural key (an edge replaced, which the
 * plan deletes first; a route whose match changes in place), and those objects' delete or update
 * settles them. A create that meets one of them waits until it is settled, within a deadline, and
 * tries once more; one that meets any other object fails at once, saying what it knows. The engine
 * checks and diffs each resource as the program registers it, which may be just after another
 * resource's create has begun: a create waits `RELEASE_GRACE_MS` for the object it met to be
 * announced before it concludes that nothing in this run gives it up.
 *
 * One board per provider process: a run's diffs and operations of one provider reach one process.
 */

/** How long a create waits for the object it met to be announced as giving its key up. */
export const RELEASE_GRACE_MS = 2_000;

/** What a wait for an object's release ended with. */
export type ReleaseWait = "released" | "not-leaving" | "timed-out";

/**
 * Why a create or update stays blocked by the object holding its natural key: the wait's end, or
 * "still-held" when that object's own update or delete ended without giving the key up (it failed).
 */
export type Blocked = Exclude<ReleaseWait, "released"> | "still-held";

/** What an operation sees of the board (see OperationContext.releases). */
export interface ReleaseView {
  /** The update or delete of `objectId` ended (whether or not it succeeded). */
  settle(objectId: string): void;
  /** Waits until `objectId`, announced by this run, is settled (within the run's deadline). */
  awaitRelease(objectId: string): Promise<ReleaseWait>;
}

interface Leaving {
  settled: Promise<void>;
  settle: () => void;
}

export class ReleaseBoard {
  private readonly leaving = new Map<string, Leaving>();
  private readonly announced = new Set<(objectId: string) => void>();

  /** A diff of this run says that `objectId` gives up a natural key (before its update or delete). */
  announce(objectId: string): void {
    if (this.leaving.has(objectId)) return;
    const resolver: { settle?: () => void } = {};
    const settled = new Promise<void>((resolve) => {
      resolver.settle = resolve;
    });
    this.leaving.set(objectId, { settled, settle: () => resolver.settle?.() });
    for (const hear of this.announced) hear(objectId);
  }

  settle(objectId: string): void {
    this.leaving.get(objectId)?.settle();
  }

  /** The board as an operation sees it, with the run's deadline for a wait. */
  view(deadlineMs: number, graceMs = RELEASE_GRACE_MS): ReleaseView {
    return {
      settle: (objectId) => this.settle(objectId),
      awaitRelease: (objectId) => this.awaitRelease(objectId, graceMs, deadlineMs),
    };
  }

  private async awaitRelease(objectId: string, graceMs: number, deadlineMs: number): Promise<ReleaseWait> {
    const leaving = this.leaving.get(objectId) ?? (await this.announcement(objectId, graceMs));
    if (!leaving) return "not-leaving";
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<"timed-out">((resolve) => {
      timer = setTimeout(() => resolve("timed-out"), deadlineMs);
    });
    try {
      return await Promise.race([leaving.settled.then(() => "released" as const), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** `objectId`'s entry once announced, or undefined when `graceMs` pass first. */
  private announcement(objectId: string, graceMs: number): Promise<Leaving | undefined> {
    return new Promise((resolve) => {
      const hear = (id: string) => {
        if (id !== objectId) return;
        done(this.leaving.get(id));
      };
      const timer = setTimeout(() => done(undefined), graceMs);
      const done = (found: Leaving | undefined) => {
        clearTimeout(timer);
        this.announced.delete(hear);
        resolve(found);
      };
      this.announced.add(hear);
    });
  }
}
