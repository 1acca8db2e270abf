/**
 * The one executor of plans: a multi-step plan that stops half-way says which step failed,
 * what the object was left as, and what to do next; a one-call plan fails with the API's own error.
 */
import { EdgeApiError, type EdgeClient } from "../../sdk/client";
import type { RouteModuleName } from "../../sdk/contract";
import { applyRoutePlan, PlanStepError } from "../../provider/plan/execute";
import { planRoute } from "../../provider/plan/route";
import {
  createdFrom,
  desired,
  MODULE_MINIMAL,
  respond,
  ROUTE_ID,
  EDGE_ID,
  storeCreate,
  applyStep,
  type WireRoute,
} from "./support";
import { routeCreateRequest } from "../../provider/model/route";
import type { RouteStep } from "../../provider/plan/types";

const fault = (operation: string) =>
  new EdgeApiError({ status: 500, errorCode: "ERR_EDGE_500", msg: "disk full", operation });

/** A client over the pure model of the service (tests/provider/support), failing the n-th call. */
function fakeClient(start: WireRoute, failAt: number) {
  let route = start;
  let calls = 0;
  const call = <T>(operation: string, step: RouteStep, answer: () => T): Promise<T> => {
    if (++calls === failAt) return Promise.reject(fault(operation));
    route = applyStep(route, step);
    return Promise.resolve(answer());
  };
  const client = {
    updateRoute: (_e: string, _id: string, body: Extract<RouteStep, { op: "patch" }>["body"]) =>
      call("PATCH route", { op: "patch", body, why: "" }, () => respond(route)),
    deleteRouteModule: (_e: string, _id: string, module: RouteModuleName) =>
      call(`DELETE ${module}`, { op: "deleteModule", module, why: "" }, () => undefined),
    getRoute: () => Promise.resolve(respond(route)),
  };
  return { client: client as unknown as EdgeClient, state: () => route };
}

const backend = { backendId: "bkd_1" };
const fromOauth = desired({ backend, oauth: MODULE_MINIMAL.oauth, compression: {} });
const toOidc = desired({ backend, oidc: MODULE_MINIMAL.oidc });
const switchPlan = () => planRoute(createdFrom(fromOauth), toOidc);

async function failure(failAt: number): Promise<{ error: unknown; left: WireRoute }> {
  const fake = fakeClient(storeCreate(routeCreateRequest(fromOauth)), failAt);
  try {
    await applyRoutePlan(fake.client, EDGE_ID, ROUTE_ID, switchPlan());
  } catch (error) {
    return { error, left: fake.state() };
  }
  throw new Error("the plan did not fail");
}

test("the switch oauth → oidc is four calls", () => {
  expect(switchPlan().steps.map((s) => s.op)).toEqual(["patch", "deleteModule", "patch", "deleteModule"]);
});

test("step 1 fails: nothing changed, fix and run again", async () => {
  const { error, left } = await failure(1);
  expect(error).toBeInstanceOf(PlanStepError);
  expect((error as Error).message).toBe(
    `route ${ROUTE_ID}: step 1 of 4 failed (PATCH backend: fail closed: disable the backend while authentication switches from oauth to oidc): ` +
      "PATCH route failed with 500 ERR_EDGE_500: disk full. The route is left as it was: nothing was changed. " +
      "Next: fix the cause, then run `pulumi up` again.",
  );
  expect((left.backend as { enabled: boolean }).enabled).toBe(true);
});

test("step 2 fails: the backend left disabled on purpose, and the message says so", async () => {
  const { error, left } = await failure(2);
  expect((error as PlanStepError).step).toBe(2);
  expect((error as Error).message).toContain(
    "The route is left with its backend disabled on purpose (fail closed) and oauth still configured. " +
      "Next: the backend was left disabled on purpose; run `pulumi up` again to finish the switch.",
  );
  expect((left.backend as { enabled: boolean }).enabled).toBe(false);
  expect(left.oauth).not.toBeNull();
});

test("step 3 fails: closed, with no authentication module yet", async () => {
  const { error, left } = await failure(3);
  expect((error as Error).message).toContain(
    "The route is left with its backend disabled on purpose (fail closed) and no authentication module.",
  );
  expect([(left.backend as { enabled: boolean }).enabled, left.oauth, left.oidc]).toEqual([
    false,
    null,
    null,
  ]);
});

test("step 4 fails: partly updated (the switch itself is done), run again to finish", async () => {
  const { error, left } = await failure(4);
  expect((error as Error).message).toMatch(
    /step 4 of 4 failed \(DELETE module compression: compression was removed from the program\).*The route is left partly updated: steps 1-3 of 4 applied\. Next: fix the cause, then run `pulumi up` again to finish: it plans from the object as it is now\./,
  );
  expect((left.backend as { enabled: boolean }).enabled).toBe(true);
  expect(left.oidc).not.toBeNull();
});

test("a plan of one call fails with the API's own error", async () => {
  const fake = fakeClient(storeCreate(routeCreateRequest(fromOauth)), 1);
  const plan = planRoute(createdFrom(fromOauth), { ...fromOauth, description: "new" });
  expect(plan.steps).toHaveLength(1);
  await expect(applyRoutePlan(fake.client, EDGE_ID, ROUTE_ID, plan)).rejects.toBeInstanceOf(EdgeApiError);
});
