/**
 * Generated sequences for the invariants test: actions on programs, runs (with lost answers and
 * kills), copies and moves of the state, and other people's changes on the service; the
 * interpreter that plays them in a World; and the four invariants checked after each sequence.
 *
 * - I1: no state holds an object made by another identity, unless taken on purpose;
 * - I2: every id in a state exists on the service;
 * - I3: the service holds no two objects with one natural key;
 * - I4: the stack converges, or the error states only true facts and a next step that works.
 */
import fc from "fast-check";
import { canonicalHostport } from "../../../sdk/contract";
import type { ResourceKind } from "../../../provider/lifecycle";
import {
  type Face,
  importResource,
  objectKey,
  pendingChanges,
  type ProgramResource,
  routeIdOf,
  type RunResult,
  Stack,
  up,
} from "./engine";
import { FOREIGN, World } from "./world";

const HOSTS = ["a.example", "b.example", "c.example"] as const;
/** Spellings of one hostport (issue 51, case 5): all one hostport. */
const SPELL = [
  (h: string) => `${h}:443`,
  (h: string) => `${h.toUpperCase()}:0443`,
  (h: string) => `${h}:00443`,
];
const MATCHES = ["/a", "/b", "/c"] as const;
const EDGES = { e1: "httpsEdge", e2: "httpsEdge", t1: "tlsEdge" } as const;
type EdgeName = keyof typeof EDGES;
const ROUTES = ["r1", "r2", "r3"] as const;

export type Action =
  | { op: "edge"; s: number; edge: EdgeName; hosts: Array<[number, number]>; note: number }
  | { op: "dropEdge"; s: number; edge: EdgeName }
  | { op: "moveHostport"; s: number; from: EdgeName; to: EdgeName; host: number }
  | { op: "route"; s: number; route: (typeof ROUTES)[number]; edge: "e1" | "e2"; match: number; note: number }
  | { op: "dropRoute"; s: number; route: (typeof ROUTES)[number] }
  | { op: "rename"; s: number; pick: number }
  | { op: "restriction"; s: number; on: boolean; policy: number }
  | {
      op: "up";
      s: number;
      fault?: { kind: "drop" | "cut"; at: number };
      target?: number;
      /** A regression's claim that this run succeeds (a move converges in one update). */
      succeeds?: true;
    }
  | { op: "refresh"; s: number }
  | { op: "copy"; s: number }
  | { op: "move"; s: number }
  | { op: "oobRoute"; pick: number; match: number }
  | { op: "oobEditRoute"; pick: number; match: number }
  | { op: "oobEdge"; host: number; spelling: number }
  | { op: "oobDelete"; pick: number };

const s = fc.nat(3);
const edgeName = fc.constantFrom<EdgeName>("e1", "e2", "t1");
const hostRef = fc.tuple(fc.nat(HOSTS.length - 1), fc.nat(SPELL.length - 1));

export const actionArb: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant("edge" as const),
      s,
      edge: edgeName,
      hosts: fc.array(hostRef, { maxLength: 2 }),
      note: fc.nat(1),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("dropEdge" as const), s, edge: edgeName }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant("moveHostport" as const),
      s,
      from: edgeName,
      to: edgeName,
      host: fc.nat(HOSTS.length - 1),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant("route" as const),
      s,
      route: fc.constantFrom(...ROUTES),
      edge: fc.constantFrom<"e1" | "e2">("e1", "e2"),
      match: fc.nat(MATCHES.length - 1),
      note: fc.nat(1),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant("dropRoute" as const), s, route: fc.constantFrom(...ROUTES) }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("rename" as const), s, pick: fc.nat(9) }) },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant("restriction" as const), s, on: fc.boolean(), policy: fc.nat(1) }),
  },
  {
    weight: 6,
    arbitrary: fc.record(
      {
        op: fc.constant("up" as const),
        s,
        fault: fc.record({
          kind: fc.constantFrom<"drop" | "cut">("drop", "cut"),
          at: fc.integer({ min: 1, max: 3 }),
        }),
        target: fc.nat(9),
      },
      { requiredKeys: ["op", "s"] },
    ),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("refresh" as const), s }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("copy" as const), s }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("move" as const), s }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("oobRoute" as const),
      pick: fc.nat(9),
      match: fc.nat(MATCHES.length - 1),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("oobEditRoute" as const),
      pick: fc.nat(9),
      match: fc.nat(MATCHES.length - 1),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("oobEdge" as const),
      host: fc.nat(HOSTS.length - 1),
      spelling: fc.nat(SPELL.length - 1),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("oobDelete" as const), pick: fc.nat(9) }) },
);

/** Where each sequence starts (deployed once, cleanly, before its actions). */
const STARTING_PROGRAM: ProgramResource[] = [
  { name: "e1", kind: "httpsEdge", props: { hostports: ["a.example:443"], description: "" } },
  {
    name: "r1",
    kind: "httpsEdgeRoute",
    props: { matchType: "path_prefix", match: "/a", description: "" },
    edge: "e1",
  },
  { name: "t1", kind: "tlsEdge", props: { hostports: ["b.example:443"], description: "" } },
  { name: "x1", kind: "tlsEdgeIpRestriction", props: { ipPolicyIds: ["ipp_a"] }, edge: "t1" },
];

/** A sequence: the face its stacks use, and its actions. */
export const sequenceArb = fc.record({
  face: fc.constantFrom<Face>("dynamic", "packaged"),
  actions: fc.array(actionArb, { minLength: 2, maxLength: 14 }),
});

/** What a played sequence did, step by step: printed with a failure. */
export type Journal = string[];

/** Plays `actions` in `world`; returns the stacks it left (the first is the original). */
export async function play(
  world: World,
  face: Face,
  actions: readonly Action[],
  journal: Journal,
  broken: string[] = [],
): Promise<Stack[]> {
  const stacks = [new Stack("s1", face)];
  const pick = (i: number) => stacks[i % stacks.length]!;
  // Every sequence starts from a deployed stack: two edges, a route, an IP restriction.
  stacks[0]!.program = structuredClone(STARTING_PROGRAM);
  journal.push(`s1: program ${summary(STARTING_PROGRAM)}; up → ${outcome(await up(world, stacks[0]!))}`);
  for (const action of actions) {
    const stack = "s" in action ? pick(action.s) : undefined;
    switch (action.op) {
      case "up": {
        const names = stack!.program.map((r) => r.name);
        const target =
          action.target !== undefined && names.length > 0 ? names[action.target % names.length] : undefined;
        const r = await up(world, stack!, { fault: action.fault, target });
        journal.push(
          `${stack!.label}: up${target ? ` --target ${target}` : ""}${action.fault ? ` (${action.fault.kind} at mutation ${action.fault.at})` : ""} → ${outcome(r)}`,
        );
        if (action.succeeds && !r.ok)
          broken.push(`I4: ${stack!.label}'s update did not converge in one run: ${outcome(r)}`);
        break;
      }
      case "refresh":
        journal.push(
          `${stack!.label}: refresh → ${outcome(await (await import("./engine")).refresh(world, stack!))}`,
        );
        break;
      case "copy": {
        const twin = stack!.copy(`s${stacks.length + 1}`);
        stacks.push(twin);
        journal.push(`${stack!.label}: copied to a new backend as ${twin.label}`);
        break;
      }
      case "move":
        stack!.move();
        journal.push(`${stack!.label}: moved to a new backend`);
        break;
      case "oobRoute":
      case "oobEditRoute":
      case "oobEdge":
      case "oobDelete":
        journal.push(`someone else: ${await outOfBand(world, action)}`);
        break;
      default: {
        const before = JSON.stringify(stack!.program);
        const next = changed(stack!.program, action);
        if (next && valid(next)) {
          stack!.program = next;
          journal.push(`${stack!.label}: program ${describe(action)} → ${summary(next)}`);
        } else stack!.program = JSON.parse(before) as ProgramResource[];
      }
    }
  }
  return stacks;
}

const outcome = (r: RunResult) =>
  r.ok
    ? "ok"
    : `${r.killed ? "killed; " : ""}failed: ${r.errors.map((e) => `${e.name}: ${e.message}`).join(" | ")}`;

function describe(action: Action): string {
  const { op, ...rest } = action as Action & Record<string, unknown>;
  delete (rest as Record<string, unknown>).s;
  return `${op} ${JSON.stringify(rest)}`;
}

const summary = (program: readonly ProgramResource[]) =>
  program
    .map(
      (r) =>
        `${r.name}${r.edge ? `@${r.edge}` : ""}${r.props.hostports ? `[${(r.props.hostports as string[]).join(",")}]` : ""}${r.props.match ? `(${String(r.props.match)})` : ""}`,
    )
    .join(" ");

/** The program after `action`, or undefined when the action does not apply. */
function changed(program: ProgramResource[], action: Action): ProgramResource[] | undefined {
  const next = structuredClone(program);
  const find = (name: string) => next.find((r) => r.name === name || r.name === `${name}'`);
  switch (action.op) {
    case "edge": {
      const hostports = action.hosts.map(([h, sp]) => SPELL[sp]!(HOSTS[h]!));
      const props = { hostports, description: action.note ? "note" : "" };
      const found = find(action.edge);
      if (found) found.props = props;
      else next.push({ name: action.edge, kind: EDGES[action.edge], props });
      return next;
    }
    case "dropEdge": {
      const found = find(action.edge);
      if (!found) return undefined;
      return next.filter((r) => r !== found && r.edge !== found.name);
    }
    case "moveHostport": {
      const from = find(action.from);
      if (!from || action.from === action.to) return undefined;
      const host = HOSTS[action.host]!;
      const hostports = (from.props.hostports as string[]) ?? [];
      const moving = hostports.find((h) => canonicalHostport(h) === `${host}:443`);
      if (!moving) return undefined;
      from.props = { ...from.props, hostports: hostports.filter((h) => h !== moving) };
      const to = find(action.to);
      if (to) to.props = { ...to.props, hostports: [...((to.props.hostports as string[]) ?? []), moving] };
      else
        next.push({
          name: action.to,
          kind: EDGES[action.to],
          props: { hostports: [moving], description: "" },
        });
      return next;
    }
    case "route": {
      const edge = find(action.edge);
      if (!edge) return undefined;
      const props = {
        matchType: "path_prefix",
        match: MATCHES[action.match]!,
        description: action.note ? "note" : "",
      };
      const found = find(action.route);
      if (found) {
        found.props = { ...found.props, ...props };
        found.edge = edge.name;
      } else next.push({ name: action.route, kind: "httpsEdgeRoute", props, edge: edge.name });
      return next;
    }
    case "dropRoute": {
      const found = find(action.route);
      return found ? next.filter((r) => r !== found) : undefined;
    }
    case "rename": {
      if (next.length === 0) return undefined;
      const r = next[action.pick % next.length]!;
      const renamed = r.name.endsWith("'") ? r.name.slice(0, -1) : `${r.name}'`;
      for (const d of next) if (d.edge === r.name) d.edge = renamed;
      r.name = renamed;
      return next;
    }
    case "restriction": {
      const edge = find("t1");
      const found = find("x1");
      if (!action.on) return found ? next.filter((r) => r !== found) : undefined;
      if (!edge) return undefined;
      const props = { ipPolicyIds: [action.policy ? "ipp_b" : "ipp_a"] };
      if (found) found.props = { ...found.props, ...props };
      else next.push({ name: "x1", kind: "tlsEdgeIpRestriction", props, edge: edge.name });
      return next;
    }
    default:
      return undefined;
  }
}

/** A program a user could run: what it names exists, and it gives no natural key twice. */
function valid(program: readonly ProgramResource[]): boolean {
  const names = new Set(program.map((r) => r.name));
  if (names.size !== program.length) return false;
  if (program.some((r) => r.edge !== undefined && !names.has(r.edge))) return false;
  const hostports = program.flatMap((r) => ((r.props.hostports as string[]) ?? []).map(canonicalHostport));
  if (new Set(hostports).size !== hostports.length) return false;
  const matches = program
    .filter((r) => r.kind === "httpsEdgeRoute")
    .map((r) => `${r.edge} ${String(r.props.match)}`);
  return new Set(matches).size === matches.length;
}

/** Somebody else's change on the service, with their own key (or none). */
async function outOfBand(world: World, action: Action): Promise<string> {
  const client = world.client(FOREIGN);
  const { https, tls, routes } = await world.snapshot();
  try {
    switch (action.op) {
      case "oobRoute": {
        const edge = https[action.pick % Math.max(1, https.length)];
        if (!edge) return "nothing to do (no HTTPS edge)";
        const made = await client.createRoute(edge.id, {
          match_type: "path_prefix",
          match: MATCHES[action.match]!,
        });
        return `created route ${made.id} at ${made.match} on ${edge.id}`;
      }
      case "oobEditRoute": {
        const route = routes[action.pick % Math.max(1, routes.length)];
        if (!route) return "nothing to do (no route)";
        const edge = https.find((e) => e.routes.some((r) => r.id === route.id))!;
        await client.updateRoute(edge.id, route.id, { match: MATCHES[action.match]! });
        return `moved route ${route.id} to ${MATCHES[action.match]}`;
      }
      case "oobEdge": {
        const hostport = SPELL[action.spelling]!(HOSTS[action.host]!);
        const made = await client.createHttpsEdge({ hostports: [hostport] });
        return `created edge ${made.id} serving ${hostport}`;
      }
      case "oobDelete": {
        const all = [
          ...https.map((e) => ({ id: e.id, del: () => client.deleteHttpsEdge(e.id) })),
          ...tls.map((e) => ({ id: e.id, del: () => client.deleteTlsEdge(e.id) })),
          ...https.flatMap((e) =>
            e.routes.map((r) => ({ id: r.id, del: () => client.deleteRoute(e.id, r.id) })),
          ),
        ];
        const victim = all[action.pick % Math.max(1, all.length)];
        if (!victim) return "nothing to do (nothing to delete)";
        await victim.del();
        return `deleted ${victim.id}`;
      }
      default:
        return "nothing";
    }
  } catch (e) {
    return `refused: ${e instanceof Error ? e.message : String(e)}`;
  }
}

/**
 * The invariants, after the sequence and at most two `pulumi up --refresh` runs of each stack, and,
 * where those end in an error, the error's own advice followed once (then two more runs).
 */
export async function violations(world: World, stacks: Stack[], journal: Journal): Promise<string[]> {
  const found: string[] = [];
  for (const stack of stacks) {
    found.push(...(await convergence(world, stack, journal)));
    // Checked as this stack converges: a copy converging later may delete an object both hold.
    found.push(...(await heldObjects(world, stack)));
  }
  const snapshot = await world.snapshot();
  for (const shared of World.sharedHostports([...snapshot.https, ...snapshot.tls]))
    found.push(`I3: two edges serve one hostport: ${shared}`);
  return found;
}

/**
 * I4 for one stack: at most two runs; where they fail, each error's advice followed (the errors of
 * one run may have several causes), then two runs more; at most three rounds.
 */
async function convergence(world: World, stack: Stack, journal: Journal): Promise<string[]> {
  const followed: string[] = [];
  for (let round = 0; ; round++) {
    const last = await converge(world, stack, journal);
    if (last.ok) break;
    const advice = await follow(world, stack, last, journal);
    if (advice === "accepted") return [];
    if (advice === "none" || round === 2)
      return [
        `I4: ${stack.label} does not converge${followed.length ? ` after following its errors' advice (${followed.join("; ")})` : ""}, and its error gives no next step that works: ${errorsOf(last)}`,
      ];
    followed.push(advice);
  }
  const pending = await pendingChanges(world, stack);
  return pending.length > 0
    ? [`I4: ${stack.label} converged, but a preview still shows changes: ${pending.join(", ")}`]
    : [];
}

/** I1 and I2 for one stack's state. */
async function heldObjects(world: World, stack: Stack): Promise<string[]> {
  const found: string[] = [];
  const snapshot = await world.snapshot();
  const existing = new Set([
    ...snapshot.https.map((e) => e.id),
    ...snapshot.tls.map((e) => e.id),
    ...snapshot.routes.map((r) => r.id),
    ...snapshot.tls.filter((e) => e.ip_restriction !== null).map((e) => `ipr:${e.id}`),
  ]);
  for (const entry of stack.state) {
    if (entry.kind === "anchor") continue;
    const key = objectKey(entry);
    const maker = world.madeBy.get(key);
    if (maker !== stack.actor && !stack.inherited.has(key) && !stack.taken.has(key))
      found.push(
        `I1: ${stack.label}'s state holds ${entry.name} = ${key}, made by ${maker ?? "nobody known"}, not taken on purpose`,
      );
    if (!existing.has(key))
      found.push(`I2: ${stack.label}'s state holds ${entry.name} = ${key}, which the service does not have`);
  }
  return found;
}

async function converge(world: World, stack: Stack, journal: Journal): Promise<RunResult> {
  let r: RunResult | undefined;
  for (let i = 0; i < 2; i++) {
    r = await up(world, stack, { refresh: true });
    journal.push(`${stack.label}: up --refresh (to converge) → ${outcome(r)}`);
    if (r.ok) break;
  }
  return r!;
}

const errorsOf = (r: RunResult) => r.errors.map((e) => `${e.name}: ${e.message}`).join(" | ");

/**
 * Follows the first error's advice as a user who knows the truth would: whether the stack's state
 * holds the object it names, and whether the stack made it. "accepted" when the object is somebody
 * else's and the error truthfully leaves the stack a change only its program can make; "none"
 * when it gives no step that applies.
 */
async function follow(world: World, stack: Stack, r: RunResult, journal: Journal): Promise<string> {
  let accepted = false;
  for (const error of r.errors) {
    const verdict = await adviceFor(world, stack, error, journal);
    if (verdict === "none") return "none";
    if (verdict === "accepted") accepted = true;
    else if (verdict !== "defer") return verdict; // one step taken: run again
  }
  // Every error is somebody else's to settle, or waits on one that is.
  return accepted ? "accepted" : "none";
}

/** The advice of one error, followed (see `follow`). */
async function adviceFor(
  world: World,
  stack: Stack,
  { name, message }: { name: string; message: string },
  journal: Journal,
): Promise<string> {
  {
    const holds = (id: string) => stack.state.some((e) => objectKey(e) === id || e.id === id);
    const ours = (id: string) => world.madeBy.get(id) === stack.actor || stack.inherited.has(id);
    const served = /edge ([A-Za-z0-9_]+) already serves/.exec(message);
    if (/its own error says why/.test(message)) return "defer"; // another error of the run is the cause
    const route = /already has a route with matchType "\w+" and match "[^"]+" \(([A-Za-z0-9_]+)\)/.exec(
      message,
    );
    const module = /TLS edge (\S+) already has an IP restriction module/.exec(message);
    const conflict = served ?? route ?? module;
    if (conflict) {
      const id = module ? `ipr:${module[1]}` : conflict[1]!;
      if (holds(id)) {
        const c = await up(world, stack, { refresh: true, continueOnError: true });
        journal.push(
          `${stack.label}: (advice, the state holds ${id}) up --continue-on-error → ${outcome(c)}`,
        );
        return "up --continue-on-error";
      }
      if (ours(id)) return take(world, stack, name, id, message, journal);
      // Somebody else's: the program must give this resource another natural key.
      return /Otherwise (give this edge other hostports|change `match`|remove it first)/.test(message)
        ? "accepted"
        : "none";
    }
    const held = /route (\S+) of edge (\S+) holds it/.exec(message);
    if (held) {
      await world.client("advice").deleteRoute(held[2]!, held[1]!);
      journal.push(`${stack.label}: (advice) deleted route ${held[1]}`);
      return `delete route ${held[1]}`;
    }
    if (/Run `pulumi up`( once without --target| again)/.test(message)) return "pulumi up";
    if (/swap them in two updates/.test(message)) return "accepted";
  }
  return "none";
}

/** Takes object `id` into resource `name` on purpose, as the error says, per face. */
async function take(
  world: World,
  stack: Stack,
  name: string,
  id: string,
  message: string,
  journal: Journal,
): Promise<string> {
  const importLine = /pulumi import edge:index:\w+ (\S+) (\S+)`/.exec(message);
  if (stack.face === "packaged" && importLine) {
    const r = await importResource(world, stack, name, importLine[2]!);
    journal.push(`${stack.label}: (advice) pulumi import ${name} ${importLine[2]} → ${outcome(r)}`);
    return `pulumi import ${name}`;
  }
  const res = stack.program.find((p) => p.name === name);
  if (
    res &&
    /adopt: true/.test(message) &&
    (res.kind === "httpsEdgeRoute" || res.kind === "tlsEdgeIpRestriction")
  ) {
    res.props = { ...res.props, adopt: true };
    journal.push(`${stack.label}: (advice) adopt: true on ${name}`);
    return `adopt ${name}`;
  }
  if (/delete it if nothing uses it/.test(message) && id.startsWith("edg")) {
    const client = world.client("advice");
    await (id.startsWith("edgtls_") ? client.deleteTlsEdge(id) : client.deleteHttpsEdge(id));
    journal.push(`${stack.label}: (advice) deleted ${id}, which nothing of its uses`);
    return `delete ${id}`;
  }
  return "none";
}

export { routeIdOf };
export type { ResourceKind };

/**
 * The sequences issue 51 found by hand, played first on each face, before the generated ones:
 * each broke an invariant before its fix.
 */
export const REGRESSIONS: ReadonlyArray<{ name: string; actions: Action[] }> = [
  {
    // Case 2: a targeted run in a copy made its new resource under the original's anchor.
    name: "a copy's targeted create",
    actions: [
      { op: "copy", s: 0 },
      { op: "route", s: 0, route: "r2", edge: "e1", match: 1, note: 0 },
      { op: "up", s: 0 },
      { op: "route", s: 1, route: "r2", edge: "e1", match: 1, note: 0 },
      { op: "up", s: 1, target: 4 },
    ],
  },
  {
    // Case 3: a hostport given up by one edge and taken by a new one in the same update.
    name: "a hostport moved between two edges in one update",
    actions: [
      { op: "edge", s: 0, edge: "e1", hosts: [[2, 0]], note: 0 },
      { op: "edge", s: 0, edge: "e2", hosts: [[0, 0]], note: 0 },
      { op: "up", s: 0, succeeds: true },
    ],
  },
  {
    // Case 3, the taker declared first: its create meets the giver before the giver is diffed.
    name: "a hostport moved to an edge declared before the one giving it up",
    actions: [
      { op: "edge", s: 0, edge: "e2", hosts: [[2, 0]], note: 0 },
      { op: "up", s: 0 },
      { op: "moveHostport", s: 0, from: "e2", to: "e1", host: 2 },
      { op: "up", s: 0, succeeds: true },
    ],
  },
  {
    // Case 4: a retry whose key had made route X took route Y, which another key made at X's old match.
    name: "a retry after a lost answer, the route moved and its match taken by another key",
    actions: [
      { op: "route", s: 0, route: "r2", edge: "e1", match: 1, note: 0 },
      { op: "up", s: 0, fault: { kind: "drop", at: 1 } },
      { op: "oobEditRoute", pick: 1, match: 2 },
      { op: "oobRoute", pick: 0, match: 1 },
      { op: "route", s: 0, route: "r2", edge: "e1", match: 1, note: 1 },
      { op: "up", s: 0 },
    ],
  },
  {
    // Case 5: one hostport in other spellings, by somebody else.
    name: "a hostport's other spellings",
    actions: [
      { op: "oobEdge", host: 0, spelling: 1 },
      { op: "oobEdge", host: 0, spelling: 2 },
      { op: "edge", s: 0, edge: "e2", hosts: [[2, 1]], note: 0 },
      { op: "oobEdge", host: 2, spelling: 0 },
      { op: "up", s: 0 },
    ],
  },
];
