import type { EdgeApiError, EdgeClient } from "../../sdk/client";
import { ID_PATTERN, mapPaths, ROUTE_SECRET_PATHS, type Route } from "../../sdk/contract";
import { isProps } from "../model/check";
import {
  checkRoute,
  decodeRoute,
  routeConfigOf,
  routeConfigOfResponse,
  routeCreateRequest,
  routeInputsOf,
  routeOutputsOf,
} from "../model/route";
import type { RouteConfig, RouteInputs, RouteOutputs } from "../model/types";
import { applyRoutePlan, deleteIgnoringNotFound, PlanStepError } from "../plan/execute";
import { planRoute } from "../plan/route";
import {
  attributeDeletion,
  attributeDrift,
  camelPath,
  redactedSecretPaths,
  secretsChangedSince,
} from "./attribution";
import { BadIdError, isConflict, keyReused, readOrGone } from "./errors";
import {
  createOptions,
  heldByCreate,
  notByThisIdentity,
  noteAdopted,
  noteCreated,
  takeItOnPurpose,
  type TakeOnPurpose,
} from "./held";
import type { Blocked } from "./releases";
import { encodeChecked, type Lifecycle, type OperationContext } from "./types";

/**
 * A route's resource id is either the route's own id, its edge then coming from state (the
 * dynamic face), or `<edgeId>/<routeId>`, which says both (the packaged face, and any import).
 */
function locateRoute(id: string, stored: unknown): { edgeId: string; routeId: string } {
  const parts = id.split("/");
  const edgeId = isProps(stored) ? stored.edgeId : undefined;
  if (parts.length === 1 && typeof edgeId === "string" && ID_PATTERN.test(edgeId) && ID_PATTERN.test(id)) {
    return { edgeId, routeId: id };
  }
  if (parts.length !== 2 || !parts.every((p) => ID_PATTERN.test(p))) {
    throw new BadIdError("HTTPS edge route", id, "<edgeId>/<routeId>, e.g. edghts_.../edghtsrt_...");
  }
  return { edgeId: parts[0]!, routeId: parts[1]! };
}

async function findByMatch(client: EdgeClient, want: RouteConfig): Promise<Route | undefined> {
  for await (const route of client.allRoutes(want.edge_id)) {
    if (route.match_type === want.match_type && route.match === want.match) return route;
  }
  return undefined;
}

/** `route` with the secret leaves at `paths` (dotted wire paths) taken from `from` (the state's). */
function withSecretsOf(route: Route, from: RouteConfig, paths: readonly string[]): Route {
  if (paths.length === 0) return route;
  return mapPaths(route, ROUTE_SECRET_PATHS, (leaf, at) => {
    if (!paths.includes(at.join("."))) return leaf;
    const kept = at.reduce<unknown>((v, k) => (isProps(v) ? v[k] : undefined), from);
    return typeof kept === "string" ? kept : leaf;
  }) as Route;
}

const takeRoute = (edgeId: string, routeId: string): TakeOnPurpose => ({
  importType: "edge:index:HttpsEdgeRoute",
  importId: `${edgeId}/${routeId}`,
  dynamic: "set `adopt: true` on the route (dynamic resources)",
});

/**
 * A create whose key an earlier create for this resource used with other inputs: the service names
 * the route that key made (`details.object_id`), and that route is this create's, brought to the
 * desired configuration in place. Never another route found by its match: a route this resource's
 * identity did not make is taken only on purpose (`adopt`, `pulumi import`).
 */
async function fromEarlierCreate(
  client: EdgeClient,
  desired: RouteConfig,
  reused: EdgeApiError,
  ctx: OperationContext | undefined,
  createAgain: () => Promise<Route>,
): Promise<Route> {
  const madeId = reused.objectId;
  if (madeId === undefined)
    throw new Error(
      `${reused.message}. The service did not say which route this resource's earlier create made (an edge-service older than this provider): upgrade the service, then run \`pulumi up\` again.`,
    );
  const made = await readOrGone(() => client.getRoute(desired.edge_id, madeId));
  // Deleted since the service answered: its key went with it, so the create is made anew.
  if (!made) {
    const again = await createAgain();
    return noteCreated("route", again.id, again, ctx);
  }
  const plan = planRoute(routeConfigOfResponse(made), desired);
  let route = made;
  try {
    if (plan.steps.length > 0) route = await applyRoutePlan(client, desired.edge_id, made.id, plan, ctx?.log);
  } catch (e) {
    if (!isMatchConflict(e)) throw e;
    throw await matchHeld(
      client,
      desired,
      `route ${made.id} was made by an earlier create for this resource (found by this stack's identity for it), and has matchType "${made.match_type}" and match "${made.match}" now (changed since it was made); it cannot take match "${desired.match}" back`,
      "not-leaving",
    );
  }
  noteAdopted(
    "route",
    made.id,
    ctx,
    "made by an earlier create for this resource with other inputs, found by this stack's identity for it",
  );
  return route;
}

/** A write refused because another route of the edge has the match (one call, or a plan's step). */
const isMatchConflict = (e: unknown): boolean =>
  isConflict(e) || (e instanceof PlanStepError && isConflict(e.cause));

/**
 * Why a route cannot take `desired`'s match (`lead` says which route and what it was doing):
 * another route of the edge holds it. What is known, and the advice that fits each answer to
 * what is not (whether this stack's state holds that route).
 */
async function matchHeld(
  client: EdgeClient,
  desired: RouteConfig,
  lead: string,
  blocked: Blocked,
): Promise<Error> {
  const holder = await findByMatch(client, desired);
  const what = `edge ${desired.edge_id} already has a route with matchType "${desired.match_type}" and match "${desired.match}"`;
  if (!holder)
    return new Error(`${lead}: ${what}, gone again since. Nothing was changed. Run \`pulumi up\` again.`);
  if (blocked === "still-held")
    return new Error(
      `${lead}: ${what} (${holder.id}), which this update moves to another match, but whose update failed (its own error says why). Nothing was changed. Once that is resolved, run \`pulumi up\` again.`,
    );
  if (blocked === "timed-out")
    return new Error(
      `${lead}: ${what} (${holder.id}), which this update moves to another match, but its update did not end in time (edge:requestDeadlineMs; two routes that swap their matches wait for each other: swap them in two updates, through a third match). Nothing was changed. Run \`pulumi up\` again.`,
    );
  return new Error(
    `${lead}: ${what} (${holder.id}): ${notByThisIdentity({ name: holder.id, grep: holder.id }, "this match on this edge")}, delete it or change its match (its audit trail says who made it), then run \`pulumi up\` again. Nothing was changed. Otherwise change \`match\`.`,
  );
}

/**
 * A create refused because the edge already has a route with this match, which this resource's
 * identity did not make (it would have answered with it). A route this run moves off that match
 * (./releases) is waited for, and the create made then; any other is taken with `adopt: true`, else
 * the error names it and how to take it on purpose.
 */
async function afterConflict(
  client: EdgeClient,
  desired: RouteConfig,
  adopt: boolean,
  ctx: OperationContext | undefined,
  createAgain: () => Promise<Route>,
): Promise<Route> {
  let existing = await findByMatch(client, desired);
  const what = `edge ${desired.edge_id} already has a route with matchType "${desired.match_type}" and match "${desired.match}"`;
  if (existing && !adopt && ctx?.releases) {
    const wait = await ctx.releases.awaitRelease(existing.id);
    if (wait === "timed-out") throw await matchHeld(client, desired, "a new route", wait);
    if (wait === "released") {
      try {
        const made = await createAgain();
        return noteCreated("route", made.id, made, ctx);
      } catch (e) {
        if (!isConflict(e)) throw e;
        const still = await findByMatch(client, desired);
        if (still?.id === existing.id) throw await matchHeld(client, desired, "a new route", "still-held");
        existing = still;
      }
    }
  }
  if (!existing) {
    // Gone since the 409 (deleted meanwhile): once more.
    try {
      const made = await createAgain();
      return noteCreated("route", made.id, made, ctx);
    } catch (e) {
      if (!isConflict(e)) throw e;
      existing = await findByMatch(client, desired);
      if (!existing) throw e;
    }
  }
  if (!adopt)
    throw new Error(
      `${what} (${existing.id}): ${notByThisIdentity({ name: existing.id, grep: existing.id }, "this match on this edge")}, ${takeItOnPurpose(takeRoute(desired.edge_id, existing.id), ctx?.name)}. Otherwise change \`match\`.`,
    );
  noteAdopted("route", existing.id, ctx);
  const plan = planRoute(routeConfigOfResponse(existing), desired);
  return plan.steps.length > 0
    ? applyRoutePlan(client, desired.edge_id, existing.id, plan, ctx?.log)
    : existing;
}

export const routeLifecycle: Lifecycle<RouteInputs, RouteOutputs, Route> = {
  check: (news, olds) => encodeChecked(checkRoute(news, olds), news, routeInputsOf),
  diff: (stored, news) => planRoute(decodeRoute(stored), routeConfigOf(news)),

  async create(client, inputs, ctx) {
    const desired = routeConfigOf(inputs);
    const create = () =>
      // Keyed on what names the route on its edge (the path, matchType, match): a route an earlier
      // run made for this resource is found again even when the program changed its other inputs.
      client.createRoute(
        desired.edge_id,
        routeCreateRequest(desired),
        createOptions(ctx, { match_type: desired.match_type, match: desired.match }),
      );
    let route: Route;
    try {
      const made = await create();
      route = noteCreated("route", made.id, made, ctx);
    } catch (e) {
      if (keyReused(e)) {
        route = await fromEarlierCreate(client, desired, e, ctx, create);
      } else {
        if (!isConflict(e)) throw e;
        route = await afterConflict(client, desired, inputs.adopt === true, ctx, create);
      }
    }
    return { id: route.id, outs: routeOutputsOf(route) };
  },

  locate(id, stored) {
    const { edgeId, routeId } = locateRoute(id, stored);
    return { edge: "https", edgeId, routeId };
  },

  async read(client, id, stored, ctx) {
    const { edgeId, routeId } = locateRoute(id, stored);
    return this.readFound(client, id, stored, await readOrGone(() => client.getRoute(edgeId, routeId)), ctx);
  },

  async readFound(client, id, stored, found, ctx) {
    const { edgeId, routeId } = locateRoute(id, stored);
    // A refresh (state to compare with; an import has none) says who made the drift it finds.
    const refresh = isProps(stored) && Object.keys(stored).length > 0;
    const what = { label: "route" as const, id: routeId, objectId: routeId, parentId: edgeId };
    if (!found) {
      if (refresh) await attributeDeletion(client, ctx, what);
      return undefined;
    }
    // Secrets answered redacted (a `read` key) are not readable: the state's values stand, unless
    // the audit trail says they changed since the stack's last write (then they differ: drift).
    const redacted = redactedSecretPaths(found);
    if (redacted.length > 0 && !refresh) {
      throw new Error(
        `route ${routeId} was answered with its secrets redacted (${redacted.map(camelPath).join(", ")}): the API key may not read secrets (scope read). Import with a key of scope write or admin.`,
      );
    }
    const changed = await secretsChangedSince(client, ctx, routeId, redacted);
    const route = withSecretsOf(
      found,
      decodeRoute(stored),
      redacted.filter((p) => !changed.includes(p)),
    );
    if (refresh)
      await attributeDrift(
        client,
        ctx,
        what,
        { ...decodeRoute(stored) },
        { ...routeConfigOfResponse(route) },
      );
    return { id, outs: routeOutputsOf(route), inputs: routeInputsOf(routeConfigOfResponse(route)) };
  },

  async update(client, id, stored, news, ctx) {
    const { edgeId, routeId } = locateRoute(id, stored);
    try {
      const desired = routeConfigOf(news);
      const plan = planRoute(decodeRoute(stored), desired);
      if (plan.steps.length === 0) return routeOutputsOf(await client.getRoute(edgeId, routeId));
      const apply = async () => routeOutputsOf(await applyRoutePlan(client, edgeId, routeId, plan, ctx?.log));
      try {
        return await apply();
      } catch (e) {
        if (!plan.releases || !isMatchConflict(e)) throw e;
        // The route holding the new match may be one this run moves off it (./releases).
        const holder = await findByMatch(client, desired);
        const wait = holder
          ? ((await ctx?.releases?.awaitRelease(holder.id)) ?? "not-leaving")
          : "not-leaving";
        const lead = `route ${routeId} cannot take match "${desired.match}"`;
        if (wait !== "released") throw await matchHeld(client, desired, lead, wait);
        try {
          return await apply();
        } catch (again) {
          if (!isMatchConflict(again)) throw again;
          const still = await findByMatch(client, desired);
          throw await matchHeld(
            client,
            desired,
            lead,
            still?.id === holder?.id ? "still-held" : "not-leaving",
          );
        }
      }
    } finally {
      ctx?.releases?.settle(routeId); // a match it gave up is free now (./releases)
    }
  },

  async delete(client, id, stored, ctx) {
    const { edgeId, routeId } = locateRoute(id, stored);
    try {
      if (heldByCreate("route", routeId, ctx)) return;
      await deleteIgnoringNotFound(() => client.deleteRoute(edgeId, routeId));
    } finally {
      ctx?.releases?.settle(routeId);
    }
  },
};
