/**
 * Bounds for tests' waits that scale with the machine running them, never assertions on time: a
 * bound is only how long a test waits before it says what it was waiting for. Written for the
 * project's 2-core machine, idle; a machine with fewer cores, or loaded beyond its cores when the
 * file starts (other suites, other work), gets proportionally more. EDGE_TEST_TIME_SCALE (a
 * number ≥ 1) raises it further by hand.
 */
import * as os from "node:os";

const cores = Math.max(1, os.availableParallelism());

/** ≥ 1: how much more time than on the idle 2-core machine a wait is given here. */
export const TIME_SCALE = Math.max(
  1,
  2 / cores,
  os.loadavg()[0]! / cores,
  Number(process.env.EDGE_TEST_TIME_SCALE) || 1,
);

/** `ms` on the idle 2-core machine, scaled to this one. */
export function scaled(ms: number): number {
  return Math.round(ms * TIME_SCALE);
}

/** `promise`'s outcome, or an error naming `what` when `boundMs` (scaled) passes first. */
export function within<T>(what: string, boundMs: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`waited ${scaled(boundMs)} ms for ${what}`)),
        scaled(boundMs),
      );
    }),
  ]).finally(() => clearTimeout(timer));
}
