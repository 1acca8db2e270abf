import type { EdgeClient } from "../../sdk/client";
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
import { applyRoutePlan, deleteIgnoringNotFound } from "../plan/execute";
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
  NOT_BY_THIS_IDENTITY,
  noteAdopted,
  noteCreated,
  takeItOnPurpose,
  type TakeOnPurpose,
} from "./held";
import { encodeChecked, type Lifecycle } from "./types";

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

export const routeLifecycle: Lifecycle<RouteInputs, RouteOutputs, Route> = {
  check: (news, olds) => encodeChecked(checkRoute(news, olds), news, routeInputsOf),
  diff: (stored, news) => planRoute(decodeRoute(stored), routeConfigOf(news)),

  async create(client, inputs, ctx) {
    const desired = routeConfigOf(inputs);
    let route: Route;
    try {
      // Keyed on what names the route on its edge (the path, matchType, match): a route an earlier
      // run made for this resource is found again even when the program changed its other inputs.
      route = await client.createRoute(
        desired.edge_id,
        routeCreateRequest(desired),
        createOptions(ctx, { match_type: desired.match_type, match: desired.match }),
      );
      noteCreated("route", route.id, route, ctx);
    } catch (e) {
      const ours = keyReused(e);
      if (!ours && !isConflict(e)) throw e;
      const existing = await findByMatch(client, desired);
      if (!existing || (!ours && inputs.adopt !== true)) {
        const what = `edge ${inputs.edgeId} already has a route with matchType "${inputs.matchType}" and match "${inputs.match}"`;
        throw new Error(
          existing
            ? `${what} (${existing.id}): ${NOT_BY_THIS_IDENTITY}, ${takeItOnPurpose(takeRoute(desired.edge_id, existing.id), ctx?.name)}. Otherwise change \`match\`.`
            : `${what}. Change \`match\`, or set \`adopt: true\` to manage that route with this resource.`,
        );
      }
      // Ours (an earlier create for this resource made it, with other inputs), or adopted: brought
      // to the desired configuration in place, no recreate.
      noteAdopted(
        "route",
        existing.id,
        ctx,
        ours
          ? "made by an earlier create for this resource with other inputs, found by this stack's identity for it"
          : undefined,
      );
      const plan = planRoute(routeConfigOfResponse(existing), desired);
      route =
        plan.steps.length > 0
          ? await applyRoutePlan(client, desired.edge_id, existing.id, plan, ctx?.log)
          : existing;
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
    const plan = planRoute(decodeRoute(stored), routeConfigOf(news));
    const route =
      plan.steps.length > 0
        ? await applyRoutePlan(client, edgeId, routeId, plan, ctx?.log)
        : await client.getRoute(edgeId, routeId);
    return routeOutputsOf(route);
  },

  async delete(client, id, stored, ctx) {
    const { edgeId, routeId } = locateRoute(id, stored);
    if (heldByCreate("route", routeId, ctx)) return;
    await deleteIgnoringNotFound(() => client.deleteRoute(edgeId, routeId));
  },
};
