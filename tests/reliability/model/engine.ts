/**
 * A model of the Pulumi engine's update, refresh and import, as far as they decide what a provider
 * is asked and what a stack's state keeps, driving the real provider faces (the dynamic providers
 * and the packaged EdgeProvider, each in a ProviderProcess of its own per run) against the real
 * service (./world). What it models, as the engine does it (pulumi 3.259.0, pkg/resource/deploy):
 * - resources register in program order once the resources they name are done; each is checked
 *   and diffed one at a time (the step generator), while steps run side by side (the executor);
 * - a replacement is create-before-delete, the old object deleted at the update's end, unless the
 *   diff asks for delete-before-replace: then the resources that name it are deleted first;
 * - after a failed step no new step starts, and the update's deletes do not run (unless
 *   `--continue-on-error`); a replaced object whose delete did not run stays in the state,
 *   pending, and is deleted at the end of a later update;
 * - state is written after every step (checkpoints); a killed run keeps what it had written;
 * - `--target` runs the named resource alone: the stack's anchor (dynamic face) is then not judged;
 * - refresh reads every resource, dropping those gone.
 * Real engine runs of the same sequences are the engine tests (create-identity, exactly-once).
 */
import { randomUUID } from "node:crypto";
import { tmpdir } from "node:os";
import { dynamicProvider, stackAnchorProvider } from "../../../provider/dynamic";
import { ProviderProcess } from "../../../provider/engine/process";
import type { ResourceKind } from "../../../provider/lifecycle";
import { EdgeProvider } from "../../../provider/plugin/provider";
import { type Actor, type Fault, Wire, type World } from "./world";

type Props = Record<string, unknown>;

export type Face = "dynamic" | "packaged";

/** A resource of a program: its inputs, and (routes, IP restrictions) the edge resource it names. */
export interface ProgramResource {
  name: string;
  kind: ResourceKind;
  props: Props;
  /** The name of the edge resource whose id is this resource's `edgeId`. */
  edge?: string;
}

/** A resource in a stack's state. `kind` "anchor": the StackAnchor (dynamic) or the provider (packaged). */
export interface StateEntry {
  name: string;
  kind: ResourceKind | "anchor";
  id: string;
  inputs: Props;
  outputs: Props;
  /** A replaced object whose delete has not run yet. */
  pendingDelete?: boolean;
}

export interface RunOptions {
  fault?: Fault;
  target?: string;
  refresh?: boolean;
  continueOnError?: boolean;
}

export interface RunResult {
  ok: boolean;
  errors: Array<{ name: string; message: string }>;
  warnings: string[];
  killed: boolean;
}

const TYPE: Record<ResourceKind, string> = {
  httpsEdge: "HttpsEdge",
  tlsEdge: "TlsEdge",
  httpsEdgeRoute: "HttpsEdgeRoute",
  tlsEdgeIpRestriction: "TlsEdgeIpRestriction",
};

/** One stack instance: its program, its state, where the state lives. */
export class Stack {
  state: StateEntry[] = [];
  program: ProgramResource[] = [];
  /** Objects its state held when it became this instance (a copy's inheritance). */
  inherited = new Set<string>();
  /** Objects taken on purpose (`pulumi import`, `adopt: true`). */
  taken = new Set<string>();
  backend: string;
  private runs = 0;

  constructor(
    readonly label: string,
    readonly face: Face,
    /** The stack's name, as `stack init` gave it: a copy keeps it (the URNs are the same). */
    readonly stackName = "dev",
    readonly project = "shop",
  ) {
    this.backend = newBackend();
  }

  /** The actor a run of this instance is, for the world's ledger. */
  get actor(): Actor {
    return `stack ${this.label}`;
  }

  urn(kind: ResourceKind, name: string): string {
    const type =
      this.face === "dynamic" ? `pulumi-nodejs:dynamic/edge:${TYPE[kind]}` : `edge:index:${TYPE[kind]}`;
    return `urn:pulumi:${this.stackName}::${this.project}::${type}::${name}`;
  }

  get anchorUrn(): string {
    return this.face === "dynamic"
      ? `urn:pulumi:${this.stackName}::${this.project}::pulumi-nodejs:dynamic/edge:StackAnchor::pulumi-edge`
      : `urn:pulumi:${this.stackName}::${this.project}::pulumi:providers:edge::edge-provider`;
  }

  /** A copy on another backend (`stack export`, `stack init` there, `stack import`): a new instance. */
  copy(label: string): Stack {
    const twin = new Stack(label, this.face, this.stackName, this.project);
    twin.state = structuredClone(this.state);
    twin.program = structuredClone(this.program);
    twin.inherited = new Set(this.state.filter((e) => e.kind !== "anchor").map((e) => objectKey(e)));
    twin.taken = new Set(this.taken);
    return twin;
  }

  /** The state moved to another backend (the original removed). */
  move(): void {
    this.backend = newBackend();
  }

  nextRun(): number {
    return ++this.runs;
  }
}

/** A file backend's place; nothing is written there (the state is this model's). */
const newBackend = () => `file:///srv/pulumi-state/${randomUUID()}`;

/** The ledger's key of a state entry's object (./world). */
export function objectKey(e: Pick<StateEntry, "kind" | "id">): string {
  return e.kind === "tlsEdgeIpRestriction"
    ? `ipr:${e.id}`
    : e.kind === "httpsEdgeRoute"
      ? routeIdOf(e.id)
      : e.id;
}
/** A route's own id: the packaged face's resource id is `<edge id>/<route id>`. */
export const routeIdOf = (id: string): string => id.split("/").pop() ?? id;

/** How long a run's creates wait for an object this run gives up (edge:requestDeadlineMs). */
export const RUN_DEADLINE_MS = 1_500;

/** The provider calls of one run, on one face. */
interface FaceRun {
  anchor(stack: Stack, commit: (f: () => void) => void, judged: boolean): Promise<void>;
  /** Whether a preview would show the stack's anchor changing (the dynamic face's StackAnchor). */
  anchorWouldChange(stack: Stack): Promise<boolean>;
  check(
    kind: ResourceKind,
    urn: string,
    olds: Props | undefined,
    news: Props,
  ): Promise<{ inputs: Props; failures: string[] }>;
  diff(
    kind: ResourceKind,
    urn: string,
    id: string,
    olds: Props,
    news: Props,
  ): Promise<{ changes: boolean; replaces: string[]; deleteBeforeReplace: boolean }>;
  create(kind: ResourceKind, urn: string, inputs: Props): Promise<{ id: string; outs: Props }>;
  read(
    kind: ResourceKind,
    urn: string,
    id: string,
    props: Props,
  ): Promise<{ id: string; outs: Props; inputs: Props } | undefined>;
  update(kind: ResourceKind, urn: string, id: string, olds: Props, news: Props): Promise<Props>;
  delete(kind: ResourceKind, urn: string, id: string, props: Props): Promise<void>;
}

function faceRun(stack: Stack, world: World, wire: Wire, warnings: string[]): FaceRun {
  const env = { PULUMI_BACKEND_URL: stack.backend, PULUMI_PROJECT: stack.project };
  const client = world.client(stack.actor, wire);
  const host = new ProviderProcess(env, () => ({ cwd: tmpdir(), env, home: tmpdir() }), {
    clientOf: () => client,
    logOf: () => ({ info: () => undefined, warn: (m) => void warnings.push(m) }),
    releaseGraceMs: 50,
  });
  host.configure({ get: (key) => (key === "edge:requestDeadlineMs" ? String(RUN_DEADLINE_MS) : undefined) });
  if (stack.face === "dynamic") {
    const providers = new Map<ResourceKind, ReturnType<typeof dynamicProvider>>();
    const of = (kind: ResourceKind) => {
      let p = providers.get(kind);
      if (!p) providers.set(kind, (p = dynamicProvider(kind, host)));
      return p;
    };
    const anchorProvider = stackAnchorProvider(host);
    let anchorOuts: Props = {};
    const withFace = (urn: string, props: Props): Props => ({
      ...props,
      __urn: urn,
      ...(anchorOuts.anchor === undefined ? {} : { __anchor: anchorOuts.anchor }),
      ...(anchorOuts.place === undefined ? {} : { __anchorPlace: anchorOuts.place }),
    });
    return {
      async anchor(s, commit, judged) {
        const entry = s.state.find((e) => e.kind === "anchor");
        const inputs = { __urn: s.anchorUrn };
        if (!judged) {
          anchorOuts = entry?.outputs ?? {};
          return;
        }
        if (!entry) {
          const made = await anchorProvider.create!(inputs);
          anchorOuts = made.outs ?? {};
          commit(() =>
            s.state.unshift({
              name: "pulumi-edge",
              kind: "anchor",
              id: made.id,
              inputs,
              outputs: anchorOuts,
            }),
          );
          return;
        }
        const diff = await anchorProvider.diff!(entry.id, entry.outputs, inputs);
        anchorOuts = diff.changes
          ? ((await anchorProvider.update!(entry.id, entry.outputs, inputs)).outs ?? {})
          : entry.outputs;
        commit(() => (entry.outputs = anchorOuts));
      },
      async anchorWouldChange(s) {
        const entry = s.state.find((e) => e.kind === "anchor");
        if (!entry) return false;
        return (await anchorProvider.diff!(entry.id, entry.outputs, { __urn: s.anchorUrn })).changes === true;
      },
      async check(kind, urn, olds, news) {
        const r = await of(kind).check!(olds ?? {}, withFace(urn, news));
        return {
          inputs: r.inputs ?? {},
          failures: (r.failures ?? []).map((f) => `${f.property}: ${f.reason}`),
        };
      },
      async diff(kind, _urn, id, olds, news) {
        const r = await of(kind).diff!(id, olds, news);
        return {
          changes: r.changes === true,
          replaces: r.replaces ?? [],
          deleteBeforeReplace: r.deleteBeforeReplace === true,
        };
      },
      async create(kind, _urn, inputs) {
        const r = await of(kind).create(inputs);
        return { id: r.id, outs: r.outs ?? {} };
      },
      async read(kind, _urn, id, props) {
        const r = await of(kind).read!(id, props);
        return r.id ? { id: r.id, outs: r.props ?? {}, inputs: r.inputs ?? {} } : undefined;
      },
      async update(kind, _urn, id, olds, news) {
        return (await of(kind).update!(id, olds, news)).outs ?? {};
      },
      async delete(kind, _urn, id, props) {
        await of(kind).delete!(id, props);
      },
    };
  }
  const edge = new EdgeProvider(host);
  return {
    async anchor(s, commit) {
      const entry = s.state.find((e) => e.kind === "anchor");
      const news = { requestDeadlineMs: String(RUN_DEADLINE_MS) };
      const { inputs } = edge.checkConfig(s.anchorUrn, entry?.inputs ?? {}, news);
      commit(() => {
        if (entry) entry.inputs = inputs;
        else s.state.unshift({ name: "edge-provider", kind: "anchor", id: "provider", inputs, outputs: {} });
      });
      edge.configure({ args: inputs, variables: {}, name: "edge-provider", urn: s.anchorUrn });
    },
    // A new anchor of the provider resource is no change a preview shows (DiffConfig ignores it).
    anchorWouldChange: async () => false,
    async check(_kind, urn, olds, news) {
      const r = await edge.check(urn, olds ?? {}, news);
      return {
        inputs: (r.inputs ?? {}) as Props,
        failures: (r.failures ?? []).map((f) => `${f.property}: ${f.reason}`),
      };
    },
    async diff(_kind, urn, id, olds, news) {
      const r = await edge.diff(id, urn, olds, news);
      return {
        changes: r.changes === true,
        replaces: r.replaces ?? [],
        deleteBeforeReplace: r.deleteBeforeReplace === true,
      };
    },
    async create(_kind, urn, inputs) {
      const r = await edge.create(urn, inputs);
      return { id: r.id, outs: (r.outs ?? {}) as Props };
    },
    async read(_kind, urn, id, props) {
      const r = await edge.read(id, urn, props);
      return r.id
        ? { id: r.id, outs: (r.props ?? {}) as Props, inputs: (r.inputs ?? {}) as Props }
        : undefined;
    },
    async update(_kind, urn, id, olds, news) {
      return ((await edge.update(id, urn, olds, news)).outs ?? {}) as Props;
    },
    async delete(_kind, urn, id, props) {
      await edge.delete(id, urn, props);
    },
  };
}

/** A lock taken one at a time, in order: the step generator. */
class Serial {
  private tail = Promise.resolve();
  run<T>(f: () => Promise<T>): Promise<T> {
    const result = this.tail.then(f);
    this.tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }
}

/** `pulumi refresh`: every resource read; one gone is dropped from the state. */
export async function refresh(world: World, stack: Stack): Promise<RunResult> {
  const result: RunResult = { ok: true, errors: [], warnings: [], killed: false };
  const face = faceRun(stack, world, new Wire(), result.warnings);
  await face.anchor(stack, (f) => f(), false);
  for (const entry of [...stack.state]) {
    if (entry.kind === "anchor") continue;
    try {
      const found = await face.read(entry.kind, stack.urn(entry.kind, entry.name), entry.id, entry.outputs);
      if (!found) stack.state = stack.state.filter((e) => e !== entry);
      else {
        entry.outputs = found.outs;
        entry.inputs = { ...entry.inputs, ...found.inputs };
      }
    } catch (e) {
      result.ok = false;
      result.errors.push({ name: entry.name, message: errorText(e) });
    }
  }
  return result;
}

/** `pulumi import <type> <name> <id>` of a resource the program declares (packaged face). */
export async function importResource(
  world: World,
  stack: Stack,
  name: string,
  id: string,
): Promise<RunResult> {
  const result: RunResult = { ok: true, errors: [], warnings: [], killed: false };
  const declared = stack.program.find((r) => r.name === name);
  if (!declared) throw new Error(`the program declares no ${name}`);
  const face = faceRun(stack, world, new Wire(), result.warnings);
  await face.anchor(stack, (f) => f(), true);
  const urn = stack.urn(declared.kind, name);
  try {
    const found = await face.read(declared.kind, urn, id, {});
    if (!found) throw new Error(`there is nothing with the id "${id}" to import`);
    stack.state = stack.state.filter((e) => e.name !== name || e.pendingDelete);
    stack.state.push({ name, kind: declared.kind, id: found.id, inputs: found.inputs, outputs: found.outs });
    stack.taken.add(objectKey({ kind: declared.kind, id: found.id }));
  } catch (e) {
    result.ok = false;
    result.errors.push({ name, message: errorText(e) });
  }
  return result;
}

/** `pulumi up` (see the module's comment). */
export async function up(world: World, stack: Stack, opts: RunOptions = {}): Promise<RunResult> {
  stack.nextRun();
  const result: RunResult = { ok: true, errors: [], warnings: [], killed: false };
  if (opts.refresh) {
    const r = await refresh(world, stack);
    result.warnings.push(...r.warnings);
    if (!r.ok) return { ...r, ok: false };
  }
  const wire = new Wire(opts.fault);
  const face = faceRun(stack, world, wire, result.warnings);
  let failed = false;
  /** A state write: none after the run was killed (the state is as it was at the cut). */
  const commit = (f: () => void) => {
    if (!wire.cut) f();
  };
  const fail = (name: string, e: unknown) => {
    failed = true;
    result.ok = false;
    result.errors.push({ name, message: errorText(e) });
  };
  const targeted = (name: string) => opts.target === undefined || opts.target === name;

  try {
    await face.anchor(stack, commit, stack.face === "packaged" || opts.target === undefined);
  } catch (e) {
    fail("anchor", e);
    return finish();
  }

  const gen = new Serial();
  const done = new Map<string, Promise<string | undefined>>();
  const live = (name: string) => stack.state.find((e) => e.name === name && !e.pendingDelete);

  const register = async (res: ProgramResource): Promise<string | undefined> => {
    const edgeId = res.edge === undefined ? undefined : await done.get(res.edge);
    if (res.edge !== undefined && edgeId === undefined) return undefined; // its edge failed: skipped
    const urn = stack.urn(res.kind, res.name);
    if (!targeted(res.name)) return live(res.name)?.id; // not part of the run: as the state has it
    const news: Props = { ...res.props, ...(edgeId === undefined ? {} : { edgeId }) };
    type Step = () => Promise<string | undefined>;
    const steps = await gen
      .run(async (): Promise<Step | undefined> => {
        if (failed && !opts.continueOnError) return undefined;
        const old = live(res.name);
        const checked = await face.check(res.kind, urn, old?.inputs, news);
        if (checked.failures.length > 0) throw new Error(checked.failures.join("; "));
        const inputs = checked.inputs;
        const create = async () => {
          const made = await face.create(res.kind, urn, inputs);
          commit(() =>
            stack.state.push({ name: res.name, kind: res.kind, id: made.id, inputs, outputs: made.outs }),
          );
          if (res.props.adopt === true)
            commit(() => stack.taken.add(objectKey({ kind: res.kind, id: made.id })));
          return made.id;
        };
        if (!old) return create;
        const diff = await face.diff(res.kind, urn, old.id, old.outputs, inputs);
        if (!diff.changes) {
          commit(() => (old.inputs = inputs));
          return async () => old.id;
        }
        if (diff.replaces.length === 0)
          return async () => {
            const outs = await face.update(res.kind, urn, old.id, old.outputs, inputs);
            commit(() => {
              old.inputs = inputs;
              old.outputs = outs;
            });
            return old.id;
          };
        if (diff.deleteBeforeReplace)
          return async () => {
            // Those that name it go first, then it: each leaves the state as its delete ends.
            for (const dep of stack.state.filter((e) => e.inputs.edgeId === old.id)) {
              if (dep.kind === "anchor") continue;
              await face.delete(dep.kind, stack.urn(dep.kind, dep.name), dep.id, dep.outputs);
              commit(() => (stack.state = stack.state.filter((e) => e !== dep)));
            }
            await face.delete(res.kind, urn, old.id, old.outputs);
            commit(() => (stack.state = stack.state.filter((e) => e !== old)));
            return create();
          };
        return async () => {
          const id = await create();
          commit(() => (old.pendingDelete = true));
          return id;
        };
      })
      .catch((e: unknown) => {
        fail(res.name, e);
        return undefined;
      });
    if (!steps) return undefined;
    try {
      return await steps();
    } catch (e) {
      fail(res.name, e);
      return undefined;
    }
  };

  // Every resource's result exists before any registers: a resource may name one declared after it.
  const settle = new Map<string, (id: string | undefined) => void>();
  for (const res of stack.program)
    done.set(res.name, new Promise((resolve) => settle.set(res.name, resolve)));
  await Promise.all(stack.program.map(async (res) => settle.get(res.name)!(await register(res))));

  if (!failed || opts.continueOnError) {
    const declared = new Set(stack.program.map((r) => r.name));
    const doomed = stack.state.filter(
      (e) => e.kind !== "anchor" && (e.pendingDelete || !declared.has(e.name)) && targeted(e.name),
    );
    for (const e of doomed.reverse()) {
      if (wire.cut) break;
      try {
        await face.delete(e.kind as ResourceKind, stack.urn(e.kind as ResourceKind, e.name), e.id, e.outputs);
        commit(() => (stack.state = stack.state.filter((x) => x !== e)));
      } catch (err) {
        fail(e.name, err);
      }
    }
    // The StackAnchor goes with the stack's last resource of ours.
    if (
      stack.face === "dynamic" &&
      opts.target === undefined &&
      !stack.state.some((e) => e.kind !== "anchor")
    )
      commit(() => (stack.state = stack.state.filter((e) => e.kind !== "anchor")));
  }
  return finish();

  function finish(): RunResult {
    result.killed = wire.cut;
    if (wire.cut) result.ok = false;
    return result;
  }
}

/**
 * What `pulumi preview` would do now: the resources it would change, empty when the stack has
 * converged (the state holds the program, nothing pending, every diff empty).
 */
export async function pendingChanges(world: World, stack: Stack): Promise<string[]> {
  const warnings: string[] = [];
  const face = faceRun(stack, world, new Wire(), warnings);
  const changes: string[] = [];
  if (await face.anchorWouldChange(stack)) changes.push("the stack's anchor");
  await face.anchor(stack, () => undefined, false);
  const declared = new Set(stack.program.map((r) => r.name));
  for (const e of stack.state) {
    if (e.kind === "anchor") continue;
    if (e.pendingDelete) changes.push(`${e.name} (pending delete)`);
    else if (!declared.has(e.name)) changes.push(`${e.name} (delete)`);
  }
  for (const res of stack.program) {
    const old = stack.state.find((e) => e.name === res.name && !e.pendingDelete);
    if (!old) {
      changes.push(`${res.name} (create)`);
      continue;
    }
    const edgeId =
      res.edge === undefined
        ? undefined
        : stack.state.find((e) => e.name === res.edge && !e.pendingDelete)?.id;
    const urn = stack.urn(res.kind, res.name);
    const checked = await face.check(res.kind, urn, old.inputs, {
      ...res.props,
      ...(edgeId ? { edgeId } : {}),
    });
    const diff = await face.diff(res.kind, urn, old.id, old.outputs, checked.inputs);
    if (diff.changes) changes.push(`${res.name} (${diff.replaces.length > 0 ? "replace" : "update"})`);
  }
  return changes;
}

const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e));
