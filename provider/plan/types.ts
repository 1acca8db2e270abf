/**
 * A plan: what one Pulumi update of one resource does to the API, as a value. Pure data: a
 * preview or an error can print it, a test can assert on it, both faces execute it through the
 * one executor (./execute).
 */
import type { RouteModuleName, RouteUpdate, TlsIpRestrictionMutate } from "../../sdk/contract";
import type { PropertyChange } from "./detail";

interface StepBase {
  /** Why the step is there, for people. */
  why: string;
  /**
   * What the object is left as when a later step fails after this one succeeded, when that
   * is worth saying (a fail-closed step). Absent: "partly updated".
   */
  leaves?: string;
  /** What to do when a later step fails after this one succeeded. Absent: run `pulumi up` again. */
  next?: string;
}

export type RouteStep =
  | (StepBase & { op: "patch"; body: RouteUpdate })
  | (StepBase & { op: "deleteModule"; module: RouteModuleName });

export type TlsIpRestrictionStep = StepBase & { op: "put"; body: TlsIpRestrictionMutate };

export type PlanStep = RouteStep | TlsIpRestrictionStep;

export interface Plan<S extends PlanStep = PlanStep> {
  /** Properties whose change forces a new object (create the new one, delete the old one). */
  replaces: string[];
  /**
   * A replacement that can only be made once the old object is gone (it names what the old one
   * holds: an edge's hostport): delete the old object first.
   */
  deleteBeforeReplace?: boolean;
  /**
   * The old object gives up a natural key in this update (an edge replaced, deleted first: its
   * hostports; a route whose match changes in place: its old match), so that a create of this run
   * that meets it waits for it (../lifecycle/releases).
   */
  releases?: boolean;
  /** Properties that differ. Empty means no change at all. */
  changed: string[];
  /** The same, leaf by leaf, as Pulumi property paths: what a preview shows. */
  changes: PropertyChange[];
  /** API calls, in order. Empty when nothing changed, and for a replace (create does it all). */
  steps: S[];
}

export type RoutePlan = Plan<RouteStep>;
export type TlsIpRestrictionPlan = Plan<TlsIpRestrictionStep>;
/** Edges have no update operation: a plan of an edge changes nothing in place or replaces it. */
export type EdgePlan = Plan<never>;

/** One line per step, as `describePlan` and failures print it. */
export function describeStep(step: PlanStep): string {
  switch (step.op) {
    case "patch":
      return `PATCH ${Object.keys(step.body).join(", ")}: ${step.why}`;
    case "deleteModule":
      return `DELETE module ${step.module}: ${step.why}`;
    case "put":
      return `PUT ip_restriction: ${step.why}`;
  }
}

/** A plan as readable lines, for logs, errors and test failure messages. */
export function describePlan(plan: Plan): string[] {
  if (plan.replaces.length > 0) return [`replace (changed: ${plan.replaces.join(", ")})`];
  if (plan.steps.length === 0) return ["no change"];
  return plan.steps.map((s, i) => `${i + 1}. ${describeStep(s)}`);
}
