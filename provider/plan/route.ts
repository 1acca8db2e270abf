/**
 * The product's brain: from the current route (canonical, as read) and the desired one
 * (canonical, as checked) to a plan of API calls. Pure: no engine, no I/O.
 */
import {
  AUTH_MODULES,
  isAuthModule,
  isRouteModuleName,
  ROUTE_MODULE_NAMES,
  type RouteModuleName,
  type RouteUpdate,
} from "../../sdk/contract";
import { deepEqual } from "../model/canonical";
import { MODULE_PROPERTY, moduleRequest, ROUTE_FIELDS, sameModule } from "../model/route";
import type { RouteConfig } from "../model/types";
import { containsUnknown } from "../model/unknown";
import { toCamel } from "../model/case";
import { propertyChanges } from "./detail";
import type { RoutePlan, RouteStep } from "./types";

type Patch = Partial<Record<keyof RouteUpdate, unknown>>;

/**
 * The plan from the current route to the desired one, both the brain's values (the wire's canonical
 * shapes). What changed and what forces a replace are named by Pulumi property, for the engine.
 */
export function planRoute(current: RouteConfig, desired: RouteConfig): RoutePlan {
  const differ: string[] = []; // wire names
  const replacing = new Set<string>();
  if (current.edge_id !== desired.edge_id || containsUnknown(desired.edge_id)) {
    replacing.add("edge_id");
    differ.push("edge_id");
  }

  const patch: Patch = {};
  for (const field of ROUTE_FIELDS) {
    if (!deepEqual(current[field], desired[field]) || containsUnknown(desired[field])) {
      differ.push(field);
      patch[field] = desired[field];
    }
  }
  const removed: RouteModuleName[] = [];
  for (const name of ROUTE_MODULE_NAMES) {
    const cur = current[name] ?? null;
    const want = desired[name] ?? null;
    if (want !== null && !sameModule(name, cur, want)) {
      differ.push(name);
      patch[name] = moduleRequest(name, want);
    } else if (want === null && cur !== null) {
      differ.push(name);
      removed.push(name);
    }
  }
  const changed = differ.map((f) => (isRouteModuleName(f) ? MODULE_PROPERTY[f] : toCamel(f)));
  const changes = propertyChanges(current, desired, differ, replacing);
  const replaces = replacing.size > 0 ? ["edgeId"] : [];
  if (replaces.length > 0) return { replaces, changed, changes, steps: [] };
  // A match changed in place gives the old one up (the route's natural key on its edge).
  const releases = "match" in patch || "match_type" in patch;
  return {
    replaces,
    changed,
    changes,
    steps: orderSteps(current, desired, patch, removed),
    ...(releases ? { releases } : {}),
  };
}

const removedStep = (m: RouteModuleName): RouteStep => ({
  op: "deleteModule",
  module: m,
  why: `${MODULE_PROPERTY[m]} was removed from the program`,
});

/**
 * Orders the calls. Normally: one PATCH with every changed field and module (each module
 * whole), then one delete per removed module.
 *
 * Switching authentication (oauth ⇄ oidc ⇄ saml) cannot be one call: the API allows one auth
 * module at a time and cannot delete through PATCH. To never serve an enabled backend without
 * authentication, not even between two calls, the plan fails closed:
 *   1. PATCH the backend to enabled: false (when it is enabled now);
 *   2. delete the old auth module;
 *   3. one PATCH setting the new auth module *and* the desired backend together (atomic);
 *   4. the remaining deletes.
 * If any call fails, the route is left with its backend disabled: closed, never open.
 */
function orderSteps(
  current: RouteConfig,
  desired: RouteConfig,
  patch: Patch,
  removed: RouteModuleName[],
): RouteStep[] {
  const steps: RouteStep[] = [];
  const authAdded = AUTH_MODULES.filter((m) => m in patch);
  const authRemoved = removed.filter(isAuthModule);
  const switching = authAdded.length > 0 && authRemoved.length > 0;

  if (!switching) {
    if (Object.keys(patch).length > 0)
      steps.push({ op: "patch", body: patch as RouteUpdate, why: "apply the changed fields and modules" });
    for (const m of removed) steps.push(removedStep(m));
    return steps;
  }

  const from = authRemoved.join(", ");
  const to = authAdded.join(", ");
  const backendNow = current.backend ?? undefined;
  const backendWanted = desired.backend ?? undefined;
  const closed = backendNow !== undefined && backendNow.enabled !== false;
  if (closed) {
    steps.push({
      op: "patch",
      body: { backend: { ...moduleRequest("backend", backendNow), enabled: false } },
      why: `fail closed: disable the backend while authentication switches from ${from} to ${to}`,
      leaves: `with its backend disabled on purpose (fail closed) and ${from} still configured`,
      next: "the backend was left disabled on purpose; run `pulumi up` again to finish the switch",
    });
    // Step 3 must re-send the backend to re-enable it, even if it did not change.
    if (backendWanted && !("backend" in patch)) patch.backend = moduleRequest("backend", backendWanted);
  }
  for (const m of authRemoved) {
    steps.push({
      op: "deleteModule",
      module: m,
      why: `remove ${m} before setting ${to} (one auth module at a time)`,
      ...(closed
        ? {
            leaves: `with its backend disabled on purpose (fail closed) and no authentication module`,
            next: "the backend was left disabled on purpose; run `pulumi up` again to finish the switch",
          }
        : {}),
    });
  }
  steps.push({
    op: "patch",
    body: patch as RouteUpdate,
    why: `set ${to}${closed ? " and re-enable the backend" : ""} in one atomic update, with the other changes`,
  });
  for (const m of removed) if (!isAuthModule(m)) steps.push(removedStep(m));
  return steps;
}
