/**
 * The one executor of plans: a multi-step plan that stops half-way says which step failed,
 * what the object was left as, and what to do next; a one-call plan fails with the API's own error.
 */
import { EdgeApiError } from "../../sdk/client";
import type { Route } from "../../sdk/contract";
import { applyRoutePlan, PlanStepError } from "../../provider/plan/execute";
import { planRoute } from "../../provider/plan/route";
import { currentOf, desired, MODULE_MINIMAL, service, stored } from "./support";

const backend = { backendId: "bkd_1" };
const fromOauth = desired({ backend, oauth: MODULE_MINIMAL.oauth, compression: {} });
const toOidc = desired({ backend, oidc: MODULE_MINIMAL.oidc });

/** A route made from `fromOauth` on the service, and the switch plan to `toOidc` from it. */
async function switching(): Promise<{ route: Route; plan: ReturnType<typeof planRoute> }> {
  const route = await stored(fromOauth);
  return { route, plan: planRoute(currentOf(route), toOidc) };
}

/** Runs the switch with the service failing its `failAt`-th call (a 500 before it acts). */
async function failure(failAt: number): Promise<{ error: unknown; left: Route; route: Route }> {
  const { route, plan } = await switching();
  service.failing(failAt);
  try {
    await applyRoutePlan(service.client, route.edge_id, route.id, plan);
  } catch (error) {
    service.failing(0);
    return { error, left: await service.client.getRoute(route.edge_id, route.id), route };
  }
  throw new Error("the plan did not fail");
}

test("the switch oauth → oidc is four calls", async () => {
  expect((await switching()).plan.steps.map((s) => s.op)).toEqual([
    "patch",
    "deleteModule",
    "patch",
    "deleteModule",
  ]);
});

test("step 1 fails: nothing changed, fix and run again", async () => {
  const { error, left, route } = await failure(1);
  expect(error).toBeInstanceOf(PlanStepError);
  expect((error as Error).message).toBe(
    `route ${route.id}: step 1 of 4 failed (PATCH backend: fail closed: disable the backend while authentication switches from oauth to oidc): ` +
      `PATCH /edges/https/${route.edge_id}/routes/${route.id} failed with 500 ERR_EDGE_500: disk full [operation op]. The route is left as it was: nothing was changed. ` +
      "Next: fix the cause, then run `pulumi up` again.",
  );
  expect(left.backend?.enabled).toBe(true);
});

test("step 2 fails: the backend left disabled on purpose, and the message says so", async () => {
  const { error, left } = await failure(2);
  expect((error as PlanStepError).step).toBe(2);
  expect((error as Error).message).toContain(
    "The route is left with its backend disabled on purpose (fail closed) and oauth still configured. " +
      "Next: the backend was left disabled on purpose; run `pulumi up` again to finish the switch.",
  );
  expect(left.backend?.enabled).toBe(false);
  expect(left.oauth).not.toBeNull();
});

test("step 3 fails: closed, with no authentication module yet", async () => {
  const { error, left } = await failure(3);
  expect((error as Error).message).toContain(
    "The route is left with its backend disabled on purpose (fail closed) and no authentication module.",
  );
  expect([left.backend?.enabled, left.oauth, left.oidc]).toEqual([false, null, null]);
});

test("step 4 fails: partly updated (the switch itself is done), run again to finish", async () => {
  const { error, left } = await failure(4);
  expect((error as Error).message).toMatch(
    /step 4 of 4 failed \(DELETE module compression: compression was removed from the program\).*The route is left partly updated: steps 1-3 of 4 applied\. Next: fix the cause, then run `pulumi up` again to finish: it plans from the object as it is now\./,
  );
  expect(left.backend?.enabled).toBe(true);
  expect(left.oidc).not.toBeNull();
});

test("a plan of one call fails with the API's own error", async () => {
  const route = await stored(fromOauth);
  const plan = planRoute(currentOf(route), { ...fromOauth, description: "new" });
  expect(plan.steps).toHaveLength(1);
  service.failing(1);
  await expect(applyRoutePlan(service.client, route.edge_id, route.id, plan)).rejects.toBeInstanceOf(
    EdgeApiError,
  );
});
