/** ResourceProvider of HttpsEdgeRoute: thin, it calls the model, the plan and the client. */
import type * as dynamic from "@pulumi/pulumi/dynamic";
import { AUTH_MODULES, type Route, routeCreateSchema } from "../../sdk/contract";
import { edgeClient } from "../config";
import { checkAgainst } from "../model/check";
import { MODULE_PROPERTY, routeInputsFromOutputs, routeOutputs } from "../model/route";
import { createBody, planRoute, type RoutePlan } from "../plan/route";
import { deleteIgnoringNotFound, gone, isConflict, readOrGone } from "./errors";

type Props = Record<string, any>;

async function execute(edgeId: string, routeId: string, plan: RoutePlan): Promise<Route> {
  const client = edgeClient();
  let route: Route | undefined;
  for (const step of plan.steps) {
    if (step.op === "patch") {
      route = await client.updateRoute(edgeId, routeId, step.body);
    } else {
      await deleteIgnoringNotFound(() => client.deleteRouteModule(edgeId, routeId, step.module));
      if (route) route = { ...route, [step.module]: null };
    }
  }
  return route ?? client.getRoute(edgeId, routeId);
}

async function findByMatch(edgeId: string, matchType: string, match: string): Promise<Route | undefined> {
  for await (const route of edgeClient().allRoutes(edgeId)) {
    if (route.match_type === matchType && route.match === match) return route;
  }
  return undefined;
}

const isObject = (v: unknown): v is Props => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * The API reads an unset circuitBreaker.numBuckets back as 0 but refuses 0 in requests, so canonical
 * inputs hold 0 for "unset". The engine hands those back to check (ignoreChanges puts the old inputs'
 * value into the news): there, a 0 the old inputs also hold means "unset". A 0 the program writes
 * on a route that has buckets set is still refused.
 */
function unsetBucketsKept(olds: Props, news: Props): Props {
  const cb = isObject(news) ? news.circuitBreaker : undefined;
  const old = isObject(olds) ? olds.circuitBreaker : undefined;
  if (!isObject(cb) || cb.numBuckets !== 0 || !isObject(old) || old.numBuckets !== 0) return news;
  const { numBuckets: _unset, ...rest } = cb;
  return { ...news, circuitBreaker: rest };
}

export const routeProvider: dynamic.ResourceProvider = {
  async check(olds: Props, news: Props) {
    const checked = checkAgainst(routeCreateSchema, unsetBucketsKept(olds, news), {
      edgeId: true,
      adopt: true,
    });
    const auth = AUTH_MODULES.map((m) => MODULE_PROPERTY[m]).filter((p) => checked.inputs[p] != null);
    if (auth.length > 1) {
      checked.failures.push({
        property: auth[1]!,
        reason: `a route can have only one of oauth, oidc and saml; remove ${auth.slice(0, -1).join(" or ")}`,
      });
    }
    return checked;
  },

  async diff(_id: string, olds: Props, news: Props) {
    const plan = planRoute(routeInputsFromOutputs(olds), news);
    return { changes: plan.changed.length > 0, replaces: plan.replaces, deleteBeforeReplace: false };
  },

  async create(inputs: Props) {
    const client = edgeClient();
    let route: Route;
    try {
      route = await client.createRoute(inputs.edgeId, createBody(inputs) as never);
    } catch (e) {
      if (!isConflict(e)) throw e;
      const existing = await findByMatch(inputs.edgeId, inputs.matchType, inputs.match);
      if (!existing || inputs.adopt !== true) {
        throw new Error(
          `edge ${inputs.edgeId} already has a route with matchType "${inputs.matchType}" and match "${inputs.match}"` +
            (existing ? ` (${existing.id})` : "") +
            `. To manage that route with this resource set \`adopt: true\`; otherwise change \`match\`.`,
        );
      }
      // Adoption: bring the existing route to the desired configuration, no recreate.
      const plan = planRoute(routeInputsFromOutputs(routeOutputs(existing)), inputs);
      route = plan.steps.length > 0 ? await execute(inputs.edgeId, existing.id, plan) : existing;
    }
    return { id: route.id, outs: routeOutputs(route) };
  },

  async read(id: string, props: Props) {
    const route = await readOrGone(() => edgeClient().getRoute(props.edgeId, id));
    if (!route) return gone();
    const outs = routeOutputs(route);
    return { id, props: outs, inputs: routeInputsFromOutputs(outs) };
  },

  async update(id: string, olds: Props, news: Props) {
    const plan = planRoute(routeInputsFromOutputs(olds), news);
    if (plan.steps.length === 0) return { outs: olds };
    return { outs: routeOutputs(await execute(news.edgeId, id, plan)) };
  },

  async delete(id: string, props: Props) {
    await deleteIgnoringNotFound(() => edgeClient().deleteRoute(props.edgeId, id));
  },
};
