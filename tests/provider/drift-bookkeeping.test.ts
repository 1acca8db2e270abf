/**
 * The stack's anchor (provider/identity) is the provider's bookkeeping, not drift: the dynamic
 * face's StackAnchor made by the first `up` after an upgrade from 0.2.0, or renewed after a copy,
 * shows in `pulumi preview --refresh`, but `pulumi-edge drift`'s engine path neither reports it as a
 * drifted resource nor counts it as a change.
 */
import type { EngineEvent } from "@pulumi/pulumi/automation";
import { EventLog } from "../../commands/drift/run";

const ANCHOR = "urn:pulumi:prod::shop::pulumi-nodejs:dynamic/edge:StackAnchor::pulumi-edge";
const ROUTE = "urn:pulumi:prod::shop::pulumi-nodejs:dynamic/edge:HttpsEdgeRoute::api";

const step = (kind: "resourcePreEvent" | "resOutputsEvent", op: string, urn: string): EngineEvent => ({
  sequence: 0,
  timestamp: 0,
  [kind]: {
    metadata: {
      op: op as never,
      urn,
      type: urn.split("::")[2]!,
      provider: "",
      old: { inputs: {} } as never,
      new: { inputs: { anchor: "x" } } as never,
    },
  },
});

test("a StackAnchor's create or update is bookkeeping: not drifted, not counted", () => {
  for (const op of ["create", "update"]) {
    const log = new EventLog();
    log.onEvent(step("resourcePreEvent", op, ANCHOR));
    log.onEvent(step("resOutputsEvent", op, ANCHOR));
    log.onEvent(step("resourcePreEvent", "same", ROUTE));
    expect([op, log.bookkeeping(), log.drifted()]).toEqual([op, 1, []]);
  }
});

test("a resource of ours changed beside it is drift, and counted", () => {
  const log = new EventLog();
  log.onEvent(step("resourcePreEvent", "create", ANCHOR));
  log.onEvent(step("resourcePreEvent", "update", ROUTE));
  log.onEvent(step("resOutputsEvent", "update", ROUTE));
  expect(log.bookkeeping()).toBe(1);
  expect(log.drifted().map((d) => d.urn)).toEqual([ROUTE]);
});
