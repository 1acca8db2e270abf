/**
 * The standalone server killed with SIGKILL in the middle of a burst of writes (8 concurrent
 * writers: route creates carrying 9 modules, multi-module PATCHes, deletes), restarted on the same
 * data directory, five times: every acknowledged write is there, the write that was in flight
 * is there whole or not at all, nothing else appeared, and SQLite's integrity check passes.
 */
import * as path from "node:path";
import Database from "libsql";
import { EdgeClient } from "../../sdk/client";
import type { Route, RouteModuleName } from "../../sdk/contract";
import { httpTransport } from "../../sdk/transport";
import { IDP_METADATA, makeTempDir, removeDir } from "../service/helpers";
import { Tally } from "./fuzz";
import { type Cli, ensureBuilt, killChildren, NO_DRAIN, prng, startCli } from "./support";

const TAGGED: RouteModuleName[] = [
  "backend",
  "ip_restriction",
  "circuit_breaker",
  "request_headers",
  "response_headers",
  "webhook_verification",
  "saml",
  "user_agent_filter",
  "traffic_policy",
];

/** A module body that carries `tag`, and how to read the tag back from the route. */
function tagged(m: RouteModuleName, tag: number): Record<string, unknown> {
  switch (m) {
    case "backend":
      return { backend_id: `b_${tag}` };
    case "ip_restriction":
      return { ip_policy_ids: [`ipp_${tag}`] };
    case "circuit_breaker":
      return { tripped_duration: tag, num_buckets: (tag % 128) + 1 };
    case "request_headers":
      return { add: { "X-Tag": String(tag) } };
    case "response_headers":
      return { remove: [`X-Tag-${tag}`] };
    case "webhook_verification":
      return { provider: "stripe", secret: `whsec_${tag}` };
    case "saml":
      return { idp_metadata: IDP_METADATA, authorized_groups: [`g${tag}`] };
    case "user_agent_filter":
      return { allow: [`agent-${tag}`] };
    case "traffic_policy":
      return { value: `policy ${tag}` };
    default:
      throw new Error(m);
  }
}
function tagOf(route: Route, m: RouteModuleName): number | null {
  const v = route[m] as any;
  if (v === null) return null;
  switch (m) {
    case "backend":
      return Number(v.backend.id.slice(2));
    case "ip_restriction":
      return Number(v.ip_policies[0].id.slice(4));
    case "circuit_breaker":
      return v.tripped_duration;
    case "request_headers":
      return Number(v.add["X-Tag"]);
    case "response_headers":
      return Number(v.remove[0].slice(6));
    case "webhook_verification":
      return Number(v.secret.slice(6));
    case "saml":
      return Number(v.authorized_groups[0].slice(1));
    case "user_agent_filter":
      return Number(v.allow[0].slice(6));
    case "traffic_policy":
      return Number(v.value.slice(7));
    default:
      return null;
  }
}

/** What a route must look like: its description's tag and each module's tag. */
type Expected = { description: string; modules: Partial<Record<RouteModuleName, number>> } | "absent";

interface Op {
  kind: "create" | "patch" | "delete";
  routeKey: string;
  /** The route as it is after this op. */
  after: Expected;
  acked: boolean;
}

const ROUNDS = 5;
const tally = new Tally();
let dataDir: string;
afterAll(() => {
  killChildren();
  tally.write("crash");
  if (dataDir) removeDir(dataDir);
});

test("SIGKILL during a burst of writes, five times: nothing acknowledged is lost, nothing partial is visible", async () => {
  ensureBuilt();
  dataDir = makeTempDir("crash");
  const random = prng(7);
  let cli: Cli = await startCli(["--port", "0", ...NO_DRAIN, "--data", dataDir]);
  let client = new EdgeClient(httpTransport({ baseUrl: cli.url, retries: 0, timeoutMs: 30_000 }));
  const edgeId = (await client.createHttpsEdge({ description: "crash" })).id;

  /** Every route by key (`w<worker>/<n>`): its id once acknowledged, and its ops in order. */
  const routes = new Map<string, { id?: string; ops: Op[] }>();
  let tag = 0;

  for (let round = 1; round <= ROUNDS; round++) {
    const killAfter = 60 + Math.floor(random() * 120); // acknowledged writes before the kill
    let acks = 0;
    let killed = false;
    const kill = () => {
      if (!killed) {
        killed = true;
        cli.child.kill("SIGKILL");
      }
    };

    const worker = async (w: number) => {
      const mine = () =>
        [...routes.entries()].filter(([k, r]) => k.startsWith(`w${w}/`) && r.id && lastState(r) !== "absent");
      for (let i = 0; i < 400 && !killed; i++) {
        const owned = mine();
        const dice = random();
        let op: Op;
        let send: () => Promise<unknown>;
        if (owned.length < 3 || dice < 0.35) {
          const key = `w${w}/${routes.size}`;
          const t = ++tag;
          const body: Record<string, unknown> = {
            match_type: "exact_path",
            match: `/${key}`,
            description: `d${t}`,
          };
          for (const m of TAGGED) body[m] = tagged(m, t);
          op = {
            kind: "create",
            routeKey: key,
            after: { description: `d${t}`, modules: Object.fromEntries(TAGGED.map((m) => [m, t])) },
            acked: false,
          };
          routes.set(key, { ops: [op] });
          send = async () => {
            routes.get(key)!.id = (await client.createRoute(edgeId, body as never)).id;
          };
        } else {
          const [key, r] = owned[Math.floor(random() * owned.length)]!;
          const before = lastState(r) as Exclude<Expected, "absent">;
          if (dice < 0.9) {
            const t = ++tag;
            const picked = TAGGED.filter(() => random() < 0.4).slice(0, 4);
            const body: Record<string, unknown> = { description: `d${t}` };
            for (const m of picked) body[m] = tagged(m, t);
            op = {
              kind: "patch",
              routeKey: key,
              after: {
                description: `d${t}`,
                modules: { ...before.modules, ...Object.fromEntries(picked.map((m) => [m, t])) },
              },
              acked: false,
            };
            send = () => client.updateRoute(edgeId, r.id!, body as never);
          } else {
            op = { kind: "delete", routeKey: key, after: "absent", acked: false };
            send = () => client.deleteRoute(edgeId, r.id!);
          }
          r.ops.push(op);
        }
        try {
          await send();
          op.acked = true;
          // The kill lands a little later, at a random moment of the burst (writes still in flight).
          if (++acks === killAfter) setTimeout(kill, Math.floor(random() * 40));
        } catch {
          return; // the server is gone: this op was in flight
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, (_, w) => worker(w)));
    kill();
    const exit = await cli.exit;
    expect(exit.signal).toBe("SIGKILL");
    tally.add("kills", `round ${round}: acknowledged writes before the kill`, acks);

    // Restart on the same data directory and compare with what was acknowledged.
    cli = await startCli(["--port", "0", ...NO_DRAIN, "--data", dataDir]);
    client = new EdgeClient(httpTransport({ baseUrl: cli.url, retries: 0, timeoutMs: 30_000 }));
    const stored = new Map<string, Route>();
    for await (const r of client.allRoutes(edgeId)) stored.set(r.match.slice(1), r);

    let inFlightApplied = 0;
    let inFlightLost = 0;
    for (const [key, r] of routes) {
      const acked = r.ops.filter((o) => o.acked);
      const inFlight = r.ops.find((o) => !o.acked);
      const candidates: Expected[] = [acked.length > 0 ? acked[acked.length - 1]!.after : "absent"];
      if (inFlight) candidates.push(inFlight.after);
      const actual: Expected = stored.has(key) ? observed(stored.get(key)!) : "absent";
      const match = candidates.findIndex((c) => JSON.stringify(c) === JSON.stringify(actual));
      if (match < 0) {
        throw new Error(
          `route ${key}: found ${JSON.stringify(actual)}, expected one of ${JSON.stringify(candidates)}`,
        );
      }
      if (inFlight) {
        if (match === 1 && candidates[0] !== candidates[1]) inFlightApplied++;
        else inFlightLost++;
        // From now on the in-flight op is what happened (or it never happened).
        if (match === 1) inFlight.acked = true;
        else r.ops.splice(r.ops.indexOf(inFlight), 1);
        if (inFlight.kind === "create" && match === 1) r.id = stored.get(key)!.id;
      }
      stored.delete(key);
    }
    // Nothing appeared that no writer sent.
    expect([...stored.keys()]).toEqual([]);
    tally.add("kills", `round ${round}: in-flight writes found whole`, inFlightApplied);
    tally.add("kills", `round ${round}: in-flight writes found absent`, inFlightLost);

    // The database file is sound, and every SAML module has its key pair (no half-written route).
    const db = new Database(path.join(dataDir, "edge.db"));
    try {
      expect(db.prepare("PRAGMA integrity_check").get()).toMatchObject({ integrity_check: "ok" });
      expect(
        db
          .prepare(
            "SELECT COUNT(*) AS n FROM routes r LEFT JOIN route_saml_keys k ON k.route_id = r.id WHERE json_extract(r.modules, '$.saml') IS NOT NULL AND k.route_id IS NULL",
          )
          .get(),
      ).toMatchObject({ n: 0 });
    } finally {
      db.close();
    }
  }
  tally.add("kills", "routes written in total", routes.size);
  cli.child.kill("SIGTERM");
  await cli.exit;
});

function lastState(r: { ops: Op[] }): Expected {
  return r.ops[r.ops.length - 1]!.after;
}

function observed(route: Route): Expected {
  const modules: Partial<Record<RouteModuleName, number>> = {};
  for (const m of TAGGED) {
    const t = tagOf(route, m);
    if (t !== null) modules[m] = t;
  }
  return { description: route.description, modules };
}
