/**
 * What one operation of one resource runs with, for both faces: the client of the current
 * configuration, its retries told to the engine's log of that resource, and the operation's
 * context (the log, and for a create the resource's identity).
 */
import type { RetryNotice } from "../../sdk/transport";
import type { EdgeClient } from "../../sdk/client";
import { edgeClient } from "../config";
import { createIdentityOf } from "../identity";
import { LAST_WRITE_KEY } from "../lifecycle/attribution";
import type { OperationContext } from "../lifecycle";
import { isProps } from "../model/check";
import { resourceLog } from "./log";

const secondsText = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** A retry as the CLI shows it: what failed, and how long the call may still go on. */
function retryText(n: RetryNotice): string {
  return `${n.operation}: ${n.reason} (attempt ${n.attempt}); retrying in ${secondsText(n.delayMs)}, giving up in ${secondsText(n.remainingMs)} (edge:requestDeadlineMs)`;
}

let warned = false;

/**
 * The client and context of one operation of `urn`. A create is told the stack's anchor, as its
 * face found it in the state (or made it for the state: see ../identity).
 */
export function operation(
  urn: string | undefined,
  opts: { create?: { anchor: string | undefined }; stored?: unknown } = {},
): { client: EdgeClient; ctx: OperationContext } {
  const log = resourceLog(urn);
  const client = edgeClient().with({ onRetry: (n) => log.info(retryText(n)) });
  const identity = opts.create && urn ? createIdentityOf(urn, opts.create.anchor) : undefined;
  if (identity?.warning && !warned) {
    warned = true;
    log.warn(identity.warning);
  }
  // The name is the URN's last part (`urn:pulumi:stack::project::type::name`).
  const name = urn?.split("::").pop() || undefined;
  return { client, ctx: { log, identity, name, lastWrite: lastWriteOf(opts.stored) } };
}

/** The state's record of the stack's last change to an object (see lifecycle/attribution), if any. */
function lastWriteOf(stored: unknown): string | undefined {
  const mark = isProps(stored) ? stored[LAST_WRITE_KEY] : undefined;
  return typeof mark === "string" && mark !== "" ? mark : undefined;
}

/**
 * Outputs as the state keeps them: with the `Request-Id` of the stack's last change to the object,
 * this operation's (`client`'s last write) or else the one `stored` held.
 */
export function withLastWrite<O extends object>(outs: O, client: EdgeClient, stored?: unknown): O {
  const mark = client.lastWrite ?? lastWriteOf(stored);
  return mark === undefined ? outs : { ...outs, [LAST_WRITE_KEY]: mark };
}
