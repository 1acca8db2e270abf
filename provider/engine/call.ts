/** What both faces keep in a resource's outputs after an operation. */
import type { EdgeClient } from "../../sdk/client";
import { LAST_WRITE_KEY } from "../lifecycle/attribution";
import { isProps } from "../model/check";

/**
 * Outputs as the state keeps them: with the `Request-Id` of the stack's last change to the object,
 * this operation's (`client`'s last write) or else the one `stored` held.
 */
export function withLastWrite<O extends object>(outs: O, client: EdgeClient, stored?: unknown): O {
  const mark = client.lastWrite ?? lastWriteOf(stored);
  return mark === undefined ? outs : { ...outs, [LAST_WRITE_KEY]: mark };
}

/** The state's record of the stack's last change to an object (see lifecycle/attribution), if any. */
export function lastWriteOf(stored: unknown): string | undefined {
  const mark = isProps(stored) ? stored[LAST_WRITE_KEY] : undefined;
  return typeof mark === "string" && mark !== "" ? mark : undefined;
}
