/**
 * The product's brain: from the current route (canonical, as read) and the desired one
 * (canonical, as checked) to a plan of API calls. Pure: no engine, no I/O. A plan is a value
 * you can print and assert on, then execute.
 */
import {
  AUTH_MODULES,
  ROUTE_MODULE_NAMES,
  ROUTE_MODULES,
  type RouteModuleName,
  type RouteUpdate,
} from "../../sdk/contract";
import { toWire } from "../model/case";
import { deepEqual, minimize } from "../model/canonical";
import { MODULE_PROPERTY } from "../model/route";
import { containsUnknown } from "../model/unknown";

export type RouteStep =
  | { op: "patch"; body: RouteUpdate; why: string }
  | { op: "deleteModule"; module: RouteModuleName; why: string };

export interface RoutePlan {
  /** Properties whose change forces a new route (`edgeId`). */
  replaces: string[];
  /** Pulumi properties that differ. Empty means no change at all. */
  changed: string[];
  /** API calls, in order. Empty when nothing changed (and for a replace: create does it all). */
  steps: RouteStep[];
}

const ROUTE_FIELDS = ["matchType", "match", "description", "metadata"] as const;
type Inputs = Record<string, unknown>;

/** Differences that carry no meaning are normalised away: the order of IP policy ids. */
function comparable(name: RouteModuleName, value: unknown): unknown {
  if (name === "ip_restriction" && value && typeof value === "object") {
    const v = value as { ipPolicyIds?: unknown };
    if (Array.isArray(v.ipPolicyIds)) return { ...v, ipPolicyIds: [...v.ipPolicyIds].sort() };
  }
  return value;
}

export function sameModule(name: RouteModuleName, a: unknown, b: unknown): boolean {
  if (containsUnknown(b)) return false;
  return deepEqual(comparable(name, a ?? null), comparable(name, b ?? null));
}

/** A module's Pulumi-side canonical value → the smallest request body with the same meaning. */
export function moduleBody(name: RouteModuleName, value: unknown): Record<string, unknown> {
  return minimize(ROUTE_MODULES[name].request, toWire(value, [name])) as Record<string, unknown>;
}

/** The body of a create: every configured module, each minimal. */
export function createBody(desired: Inputs): Record<string, unknown> {
  const body: Record<string, unknown> = {
    match_type: desired.matchType,
    match: desired.match,
  };
  if (desired.description) body.description = desired.description;
  if (desired.metadata) body.metadata = desired.metadata;
  for (const name of ROUTE_MODULE_NAMES) {
    const value = desired[MODULE_PROPERTY[name]];
    if (value != null) body[name] = moduleBody(name, value);
  }
  return body;
}

export function planRoute(current: Inputs, desired: Inputs): RoutePlan {
  const changed: string[] = [];
  const replaces: string[] = [];
  if (current.edgeId !== desired.edgeId || containsUnknown(desired.edgeId)) {
    replaces.push("edgeId");
    changed.push("edgeId");
  }

  const patch: Record<string, unknown> = {};
  for (const field of ROUTE_FIELDS) {
    if (!deepEqual(current[field] ?? "", desired[field] ?? "") || containsUnknown(desired[field])) {
      changed.push(field);
      patch[field === "matchType" ? "match_type" : field] = desired[field] ?? "";
    }
  }
  const removed: RouteModuleName[] = [];
  for (const name of ROUTE_MODULE_NAMES) {
    const prop = MODULE_PROPERTY[name];
    const cur = current[prop] ?? null;
    const want = desired[prop] ?? null;
    if (want !== null && !sameModule(name, cur, want)) {
      changed.push(prop);
      patch[name] = moduleBody(name, want);
    } else if (want === null && cur !== null) {
      changed.push(prop);
      removed.push(name);
    }
  }
  if (replaces.length > 0) return { replaces, changed, steps: [] };
  return { replaces, changed, steps: orderSteps(current, desired, patch, removed) };
}

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
  current: Inputs,
  desired: Inputs,
  patch: Record<string, unknown>,
  removed: RouteModuleName[],
): RouteStep[] {
  const steps: RouteStep[] = [];
  const authAdded = AUTH_MODULES.filter((m) => m in patch);
  const authRemoved = removed.filter((m): m is (typeof AUTH_MODULES)[number] =>
    (AUTH_MODULES as readonly string[]).includes(m),
  );
  const switching = authAdded.length > 0 && authRemoved.length > 0;

  if (!switching) {
    if (Object.keys(patch).length > 0)
      steps.push({ op: "patch", body: patch as RouteUpdate, why: "apply changed fields and modules" });
    for (const m of removed)
      steps.push({ op: "deleteModule", module: m, why: `${MODULE_PROPERTY[m]} was removed` });
    return steps;
  }

  const backendNow = current[MODULE_PROPERTY.backend] as { enabled?: boolean } | undefined;
  const backendWanted = desired[MODULE_PROPERTY.backend] as { enabled?: boolean } | undefined;
  if (backendNow && backendNow.enabled !== false) {
    steps.push({
      op: "patch",
      body: { backend: { ...moduleBody("backend", backendNow), enabled: false } } as RouteUpdate,
      why: `fail closed: disable the backend while authentication switches from ${authRemoved.join(", ")} to ${authAdded.join(", ")}`,
    });
    // Step 3 must re-send the backend to re-enable it, even if it did not change.
    if (backendWanted && !("backend" in patch)) patch.backend = moduleBody("backend", backendWanted);
  }
  for (const m of authRemoved) {
    steps.push({
      op: "deleteModule",
      module: m,
      why: `remove ${m} before ${authAdded.join(", ")} (one auth module at a time)`,
    });
  }
  steps.push({
    op: "patch",
    body: patch as RouteUpdate,
    why: `set ${authAdded.join(", ")} and the backend in one atomic update, with the other changes`,
  });
  for (const m of removed) {
    if (!(authRemoved as string[]).includes(m)) {
      steps.push({ op: "deleteModule", module: m, why: `${MODULE_PROPERTY[m]} was removed` });
    }
  }
  return steps;
}

/** A plan as readable lines, for logs and test failure messages. */
export function describePlan(plan: RoutePlan): string[] {
  if (plan.replaces.length > 0) return [`replace (changed: ${plan.replaces.join(", ")})`];
  if (plan.steps.length === 0) return ["no change"];
  return plan.steps.map((s, i) =>
    s.op === "patch"
      ? `${i + 1}. PATCH ${Object.keys(s.body).join(", ")}: ${s.why}`
      : `${i + 1}. DELETE module ${s.module}: ${s.why}`,
  );
}
