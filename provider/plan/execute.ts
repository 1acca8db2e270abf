/**
 * The one executor of plans, for both faces. A plan of several calls can stop half-way (the
 * network, the service); the error then says which step failed, what the object was left as,
 * and what to do next, from the plan itself.
 */
import { EdgeApiError, type EdgeClient } from "../../sdk/client";
import type { Route, TlsIpRestriction } from "../../sdk/contract";
import { describeStep, type PlanStep, type RoutePlan, type TlsIpRestrictionPlan } from "./types";

/** A step of a multi-step plan failed; `cause` is what the call failed with. */
export class PlanStepError extends Error {
  constructor(
    /** What the plan updates: `{ kind: "route", id }`. */
    readonly target: { kind: string; id: string },
    /** 1-based. */
    readonly step: number,
    readonly steps: readonly PlanStep[],
    override readonly cause: unknown,
  ) {
    const done = steps[step - 2];
    const total = steps.length;
    const left =
      step === 1
        ? "as it was: nothing was changed"
        : (done?.leaves ?? `partly updated: step${step > 2 ? `s 1-${step - 1}` : " 1"} of ${total} applied`);
    const next =
      done?.next ??
      (step === 1
        ? "fix the cause, then run `pulumi up` again"
        : "fix the cause, then run `pulumi up` again to finish: it plans from the object as it is now");
    super(
      `${target.kind} ${target.id}: step ${step} of ${total} failed (${describeStep(steps[step - 1]!)}): ${errorText(cause)}. ` +
        `The ${target.kind} is left ${left}. Next: ${next}.`,
    );
    this.name = "PlanStepError";
  }
}

const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e)).replace(/\.$/, "");

/** Where the executor says what it does: the engine's log of the resource (see lifecycle). */
export interface StepLog {
  info(message: string): void;
}

/**
 * Runs the steps in order, each said first with its reason; a failure of a plan of more than one
 * step becomes a PlanStepError.
 */
async function runSteps<S extends PlanStep>(
  target: PlanStepError["target"],
  steps: readonly S[],
  run: (step: S) => Promise<void>,
  log?: StepLog,
) {
  for (const [i, step] of steps.entries()) {
    log?.info(`${target.kind} ${target.id}: step ${i + 1} of ${steps.length}: ${describeStep(step)}`);
    try {
      await run(step);
    } catch (e) {
      // One call: the API's own error already says everything.
      throw steps.length > 1 ? new PlanStepError(target, i + 1, steps, e) : e;
    }
  }
}

/** "Already gone" is what a delete wants. */
export async function deleteIgnoringNotFound(run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (e) {
    if (!(e instanceof EdgeApiError && e.isNotFound)) throw e;
  }
}

/** Executes a route plan; answers the route as the last call left it. */
export async function applyRoutePlan(
  client: EdgeClient,
  edgeId: string,
  routeId: string,
  plan: RoutePlan,
  log?: StepLog,
): Promise<Route> {
  let route: Route | undefined;
  await runSteps(
    { kind: "route", id: routeId },
    plan.steps,
    async (step) => {
      if (step.op === "patch") {
        route = await client.updateRoute(edgeId, routeId, step.body);
      } else {
        await deleteIgnoringNotFound(() => client.deleteRouteModule(edgeId, routeId, step.module));
        if (route) route = { ...route, [step.module]: null };
      }
    },
    log,
  );
  return route ?? client.getRoute(edgeId, routeId);
}

/** Executes a plan of a TLS edge's IP restriction module; answers the module as left. */
export async function applyTlsIpRestrictionPlan(
  client: EdgeClient,
  edgeId: string,
  plan: TlsIpRestrictionPlan,
  log?: StepLog,
): Promise<TlsIpRestriction> {
  let module: TlsIpRestriction | undefined;
  await runSteps(
    { kind: "IP restriction of TLS edge", id: edgeId },
    plan.steps,
    async (step) => {
      module = await client.putTlsIpRestriction(edgeId, step.body);
    },
    log,
  );
  return module ?? client.getTlsIpRestriction(edgeId);
}
