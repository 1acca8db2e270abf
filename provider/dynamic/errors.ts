import { EdgeApiError } from "../../sdk/client";

export const isNotFound = (e: unknown): boolean => e instanceof EdgeApiError && e.isNotFound;
export const isConflict = (e: unknown): boolean => e instanceof EdgeApiError && e.isConflict;

/** Runs a delete; "already gone" counts as done. */
export async function deleteIgnoringNotFound(run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
}

/** Runs a read; "not found" means the object is gone (undefined). */
export async function readOrGone<T>(run: () => Promise<T>): Promise<T | undefined> {
  try {
    return await run();
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

/** What `read` answers for an object that no longer exists: an empty id means "gone". */
export const gone = () => ({ id: "", props: {} }); // fresh object: the host mutates it
