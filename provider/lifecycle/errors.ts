import { EdgeApiError } from "../../sdk/client";

export const isNotFound = (e: unknown): boolean => e instanceof EdgeApiError && e.isNotFound;
export const isConflict = (e: unknown): boolean => e instanceof EdgeApiError && e.isConflict;
/** A keyed create whose key an earlier create of the same resource used with another body (see `EdgeApiError.keyReused`). */
export const keyReused = (e: unknown): e is EdgeApiError => e instanceof EdgeApiError && e.keyReused;

/** Runs a read; "not found" means the object is gone (undefined). */
export async function readOrGone<T>(run: () => Promise<T>): Promise<T | undefined> {
  try {
    return await run();
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

/** An id a user gave (an import) that does not have the expected form. */
export class BadIdError extends Error {
  constructor(kind: string, id: string, expected: string) {
    super(`"${id}" is not the id of a ${kind}: expected ${expected}`);
    this.name = "BadIdError";
  }
}
