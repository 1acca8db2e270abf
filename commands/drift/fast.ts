/**
 * The fast drift check of one stack: no program, no engine run. Its state and current config say
 * what was deployed and with which provider settings (./stacks `readStack`: on a file backend its
 * checkpoint, history and settings files, no CLI run; else `pulumi stack export`, `stack history`
 * and, where the settings file cannot say, `pulumi config`); the live objects come from one `GET` per edge (an HTTPS edge's answer
 * carries all its routes, a TLS edge's its IP restriction); each resource is then judged by the
 * provider's own refresh and diff (the lifecycles' `readFound` and `diff`), which also name the
 * authors from the audit trail. So its verdicts are `pulumi refresh --preview-only`'s: what the
 * service holds against what the last `up` deployed. Like that command it does not run the
 * program: a program change not yet deployed, or an `ignoreChanges` in it, is the engine path's.
 *
 * A stack it cannot judge goes to the engine path whole, and the report says which judged: one
 * with resources of other providers, pending operations, a provider it cannot configure, or a
 * state that holds objects and that a refresh (an `up --refresh` that then failed, an import) last
 * wrote: that state holds what the service held then, not what was deployed, so only the program
 * can tell drift there.
 */
import type { EdgeClient } from "../../sdk/client";
import type { HttpsEdge, TlsEdge } from "../../sdk/contract";
import { edgeClient } from "../../provider/client";
import { concealLeaves, fromExported, keepSecretsOf } from "../../provider/engine/secrets";
import { type Found, LIFECYCLES, type Location, type ResourceKind } from "../../provider/lifecycle";
import { LAST_WRITE_KEY } from "../../provider/lifecycle/attribution";
import { readOrGone } from "../../provider/lifecycle/errors";
import { checkedInputs } from "../../provider/lifecycle/types";
import { SECRET_LEAVES } from "../../provider/model";
import type { AuthorLine, UnattributedLine } from "../../provider/lifecycle/authorship";
import {
  type Author,
  authorOf,
  changedFields,
  type DriftedResource,
  type Unattributed,
  unattributedOf,
} from "./report";
import {
  classify,
  type HeldResource,
  heldResources,
  NoProvider,
  providerSettingsOf,
  revealed,
  type StateResource,
  stateOf,
} from "./state";
import { type Engine, readStack, type StackRead, type Target } from "./stacks";

/** Why the fast path hands a stack to the engine. */
export class CannotJudge {
  constructor(readonly reason: string) {}
}

interface Judged {
  /** The resources that drifted (empty: clean). */
  resources: DriftedResource[];
}

/**
 * The fast check of one stack: a StackReport judged here, or CannotJudge (the engine path's).
 * Errors reading the state or the service are the report's error, as on the engine path. `read`:
 * the stack as already read (readStack), else it is read here.
 */
export async function judgeStackFast(
  target: Target,
  engine: Engine,
  read?: StackRead,
): Promise<Judged | CannotJudge> {
  const { exported, config, last } = read ?? (await readStack(target, engine));
  const { resources, pending } = stateOf(exported);
  // What the state says was deployed is only that after a successful update: a refresh (or an
  // update that failed after its refresh, an import) writes what the service held into it, drift
  // included. Then only the program can say what was meant. A state that holds none of this
  // provider's objects (a stack destroyed, or never deployed) holds no such values: `refresh`
  // finds nothing in it to judge, and neither does this.
  const holds = resources.some((r) => !["skip", "foreign"].includes(classify(r)) && r.id !== undefined);
  if (holds && last && !(last.kind === "update" && last.result === "succeeded")) {
    return new CannotJudge(
      `the stack's last operation was a ${last.kind} that ${last.result}: its state may hold what the service held then, drift included, so the program judges`,
    );
  }
  if (pending) return new CannotJudge("the state holds pending operations (an interrupted update)");
  const foreign = resources.filter((r) => classify(r) === "foreign").map((r) => r.type);
  if (foreign.length > 0) {
    return new CannotJudge(`resources of other providers (${[...new Set(foreign)].sort().join(", ")})`);
  }
  const settings = providerSettingsOf(resources, config, engine.env, target.dir);

  // One GET per edge, per client: what every read of the stack finds.
  type Job = HeldResource & { client: EdgeClient };
  const jobs: Job[] = [];
  for (const held of heldResources(resources)) {
    const of = settings.of(held.r);
    if (of instanceof NoProvider) return new CannotJudge(of.reason);
    jobs.push({ ...held, client: edgeClient(of) });
  }
  const edges = new Map<EdgeClient, Map<string, Promise<Edge | undefined>>>();
  const fetchEdge = (client: EdgeClient, at: Location): Promise<Edge | undefined> => {
    const mine = edges.get(client) ?? new Map<string, Promise<Edge | undefined>>();
    edges.set(client, mine);
    const key = `${at.edge}/${at.edgeId}`;
    let got = mine.get(key);
    if (!got) {
      // The client parses each answer with the contract's schema: an edge here is one.
      got =
        at.edge === "https"
          ? readOrGone(() => client.getHttpsEdge(at.edgeId))
          : readOrGone(() => client.getTlsEdge(at.edgeId));
      mine.set(key, got);
    }
    return got;
  };

  const drifted: DriftedResource[] = [];
  for (const job of jobs) {
    const edge = await fetchEdge(job.client, job.at);
    const found = edge === undefined ? undefined : FOUND_IN[job.kind](edge, job.at);
    drifted.push(...(await judgeResource(job, found)));
  }
  return { resources: drifted };
}

type Edge = HttpsEdge | TlsEdge;

/** What each kind's read would have found, from its edge's answer (undefined: gone). */
const FOUND_IN: { [K in ResourceKind]: (edge: Edge, at: Location) => Found[K] | undefined } = {
  httpsEdge: (edge) => edge,
  tlsEdge: (edge) => edge,
  httpsEdgeRoute: (edge, at) => ("routes" in edge ? edge.routes.find((r) => r.id === at.routeId) : undefined),
  tlsEdgeIpRestriction: (edge) => ("ip_restriction" in edge ? (edge.ip_restriction ?? undefined) : undefined),
};

/**
 * One resource, as `preview --refresh` of an unchanged program judges it: the provider's refresh
 * of the state's outputs (its attribution names the authors), then its diff against the state's
 * inputs. Drifted: gone (the engine would create it again), or a diff with changes.
 */
async function judgeResource<K extends ResourceKind>(
  { r, id, kind, client }: { r: StateResource; id: string; kind: K; client: EdgeClient },
  found: Found[K] | undefined,
): Promise<DriftedResource[]> {
  const life = LIFECYCLES[kind];
  const name = r.urn.split("::").pop() ?? r.urn;
  const stored = revealed(r.outputs);
  const lastWrite = stored[LAST_WRITE_KEY];
  // The authors, as values: the warnings the lifecycle also writes are for the engine's log.
  const authors: Author[] = [];
  const unattributed: Unattributed[] = [];
  const ctx = {
    name,
    lastWrite: typeof lastWrite === "string" ? lastWrite : undefined,
    log: { info: () => undefined, warn: () => undefined },
    attribution: {
      author: (line: AuthorLine) => void authors.push(authorOf(line)),
      unattributed: (line: UnattributedLine) => void unattributed.push(unattributedOf(line)),
    },
  };
  const read = await life.readFound(client, id, stored, found, ctx);
  const who = () => ({ authors, ...(unattributed.length > 0 ? { unattributed } : {}) });
  const base = { urn: r.urn, name, type: r.type };
  if (read === undefined) return [{ ...base, op: "create", fields: [], ...who() }];
  const declared = revealed(r.inputs);
  const plan = life.diff(read.outs, checkedInputs(declared), id);
  if (plan.changed.length === 0) return [];
  // Shown as the engine path shows them: secrets as [secret], the state's inputs against the live ones.
  const shown = (v: object) =>
    concealLeaves(keepSecretsOf({ ...v }, fromExported(r.inputs ?? {})), SECRET_LEAVES[kind]);
  const keys = [...new Set(plan.changes.map((c) => c.path.split(/[.[]/)[0] ?? c.path))];
  return [
    {
      ...base,
      op: plan.replaces.length > 0 ? "replace" : "update",
      fields: changedFields(shown(declared), shown(read.inputs), keys),
      ...who(),
    },
  ];
}
