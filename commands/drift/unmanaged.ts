/**
 * `pulumi-edge drift --unmanaged`: the objects on the services the checked stacks deploy to that
 * none of them holds. After a restore from a backup, what a stack removed since the backup is back
 * on the service and in no state; an object made by hand never was in one. Each is listed with
 * its type, id, creation time and the `pulumi import` command that would take it, named as
 * `pulumi-edge export` names it.
 *
 * A stack's holdings are the ids of its state's resources (`pulumi stack export`): ids are unique
 * on a service, so an object is held when any checked stack's state names it, whichever service
 * that stack's provider points at. The services listed are those the checked stacks' resources
 * (or, for a stack holding none, its `edge:baseUrl`) point at.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { EdgeClient } from "../../sdk/client";
import { errorMessage } from "../../sdk/contract";
import { edgeClient } from "../../provider/client";
import type { ProviderSettings } from "../../provider/config";
import { type Fleet, type FleetObject, fleetObjects } from "../export/fleet";
import { readFleet } from "../export/read";
import type { StackReport, Unmanaged, UnmanagedObject, UnmanagedService } from "./report";
import { stackLabel } from "./report";
import { pool } from "./run";
import {
  type HeldResource,
  heldKey,
  heldResources,
  NoProvider,
  objectKey,
  providerSettingsOf,
  stateOf,
} from "./state";
import type { Engine, StackRead, Target } from "./stacks";

/** The key of a listed object, as heldKey makes it for a resource (a route by its own id). */
function keyOf(o: FleetObject): string {
  return o.type === "HttpsEdgeRoute" ? objectKey(o.type, o.route.id) : objectKey(o.type, o.edge.id);
}

/** What an object is, for a reader. */
function summaryOf(o: FleetObject): string {
  const edge = (e: { description: string; hostports: string[] }) =>
    e.description || e.hostports.join(", ") || "(no description, no hosts)";
  switch (o.type) {
    case "HttpsEdge":
    case "TlsEdge":
      return edge(o.edge);
    case "HttpsEdgeRoute":
      return `route ${o.route.match_type} ${o.route.match} of HTTPS edge ${o.edge.id}${o.route.description ? ` (${o.route.description})` : ""}`;
    case "TlsEdgeIpRestriction":
      return `IP restriction of TLS edge ${o.edge.id}: ${o.module.enabled ? "" : "disabled, "}policies ${o.module.ip_policies.map((p) => p.id).join(", ") || "(none)"}`;
  }
}

/** The objects of `fleet` whose keys `held` lacks, named and with their import commands. */
export function unmanagedObjects(fleet: Fleet, held: ReadonlySet<string>): UnmanagedObject[] {
  return fleetObjects(fleet)
    .filter((o) => !held.has(keyOf(o)))
    .map((o) => {
      const name = o.logical.join(".");
      const createdAt =
        o.type === "HttpsEdgeRoute"
          ? o.route.created_at
          : o.type === "TlsEdgeIpRestriction"
            ? undefined
            : o.edge.created_at;
      return {
        type: o.type,
        id: o.id,
        name,
        ...(createdAt === undefined ? {} : { createdAt }),
        summary: summaryOf(o),
        // Entry names and ids hold only letters, digits and `_.-/`: words any shell takes as they are.
        importCommand: `pulumi import edge:index:${o.type} ${name} ${o.id}`,
      };
    });
}

/** How a service is named in the report, and told apart from another. */
function serviceName(settings: ProviderSettings): string {
  if (settings.baseUrl === undefined) return settings.dataDir;
  try {
    const url = new URL(settings.baseUrl);
    return `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
  } catch {
    return settings.baseUrl;
  }
}

/**
 * Reads the checked stacks' states (with `read`, which keeps what the fast path read), `parallel`
 * at a time, and the services they deploy to, and says what on those services none of them
 * holds. `reports`: every stack's report, and one for each directory whose stacks could not be
 * listed: each that is an error is a caveat, and the list is complete only without caveats.
 */
export async function findUnmanaged(
  targets: readonly Target[],
  reports: readonly StackReport[],
  read: (target: Target) => Promise<StackRead>,
  engine: Engine,
  parallel: number,
): Promise<Unmanaged> {
  const held = new Set<string>();
  const services = new Map<string, ProviderSettings>();
  const firstLine = (text: string | undefined) => (text ?? "unknown").split("\n")[0];
  const caveats = reports
    .filter((r) => r.verdict === "error")
    .map((r) =>
      r.stack === "*"
        ? `${r.dir}: its stacks could not be listed (${firstLine(r.error)}): objects they hold are listed too`
        : `${stackLabel(r)}: it could not be checked (${firstLine(r.error)}): objects it holds may be listed too`,
    );
  const addService = (settings: ProviderSettings) => {
    // An embedded service that never ran there holds nothing: opening it would make a database.
    if (settings.baseUrl === undefined && !existsSync(join(settings.dataDir, "edge.db"))) return;
    const name = serviceName(settings);
    if (!services.has(name)) services.set(name, settings);
  };
  // Read side by side (each read is a few CLI calls), then taken in the targets' order.
  const reads = await pool(targets, parallel, (target) =>
    read(target).then(
      (stack) => ({ target, stack }),
      (e: unknown) => ({ target, error: errorMessage(e) }),
    ),
  );
  for (const got of reads) {
    const { target } = got;
    const label = stackLabel(target);
    if ("error" in got) {
      caveats.push(`${label}: its state could not be read (${got.error}): objects it holds are listed too`);
      continue;
    }
    const { stack } = got;
    const { resources, pending } = stateOf(stack.exported);
    if (pending)
      caveats.push(
        `${label}: an interrupted update left pending operations: objects it was creating are listed too`,
      );
    let ours: HeldResource[];
    try {
      ours = heldResources(resources);
    } catch (e) {
      caveats.push(
        `${label}: its state names an object it cannot locate (${errorMessage(e)}): the objects it holds are listed too`,
      );
      continue;
    }
    for (const h of ours) held.add(heldKey(h));
    try {
      const settings = providerSettingsOf(resources, stack.config, engine.env, target.dir);
      for (const h of ours) {
        const of = settings.of(h.r);
        if (!(of instanceof NoProvider)) addService(of);
      }
      const own = settings.ofStack();
      if (own.baseUrl !== undefined) addService(own);
    } catch (e) {
      caveats.push(
        `${label}: which service it deploys to is unknown (${errorMessage(e)}): that service is not listed`,
      );
    }
  }
  const listed: UnmanagedService[] = [];
  for (const [service, settings] of services) {
    try {
      const client: EdgeClient = edgeClient(settings);
      listed.push({ service, objects: unmanagedObjects(await readFleet(client), held) });
    } catch (e) {
      listed.push({ service, objects: [], error: errorMessage(e) });
    }
  }
  return { stacks: targets.length, complete: caveats.length === 0, services: listed, caveats };
}
