/**
 * The world a generated sequence runs in (tests/reliability/invariants.test.ts): the real service
 * in this process (SQLite in memory, or a PostgreSQL database), reached through transports that
 * can lose answers and go dark, and a ledger of who made every object, written from what the
 * service answered, so that the invariants can tell a stack's objects from anybody else's.
 */
import { EdgeClient } from "../../../sdk/client";
import type { HttpsEdge, Route, TlsEdge } from "../../../sdk/contract";
import { canonicalHostport } from "../../../sdk/contract";
import type { Transport } from "../../../sdk/transport";
import { createEdgeApp } from "../../../service/http/app";
import type { Store } from "../../../service/store/store";
import { openStore } from "../../../service/store/store-open";
import { SqliteStore } from "../../../service/store/store-sqlite";
import { sharedCluster } from "../../support/postgres";

/** Who sent a request: a run of one stack instance (`stack s1#1`), or anybody else (`foreign`). */
export type Actor = string;
export const FOREIGN: Actor = "foreign";

/** The ledger's key of an object: its id; a TLS edge's IP restriction is `ipr:<edge id>`. */
export const restrictionKey = (edgeId: string): string => `ipr:${edgeId}`;

/**
 * A fault of one run's network, counted in the run's mutating requests (POST, PUT, PATCH, DELETE):
 * - `drop`: the n-th one reaches the service, which acts on it, and its answer is lost (the
 *   caller sees a network failure); the requests after it go through;
 * - `cut`: the same, and from then on nothing of the run reaches the service, and nothing the
 *   run learns any more is kept (the engine was killed: its state is as it was at the cut).
 */
export interface Fault {
  kind: "drop" | "cut";
  at: number;
}

/** What one run's transport did: whether it was cut, and when. */
export class Wire {
  mutations = 0;
  cut = false;
  constructor(readonly fault?: Fault) {}
}

export class World {
  /** Who made each object (first maker; a replayed create made nothing). */
  readonly madeBy = new Map<string, Actor>();
  private constructor(
    readonly store: Store,
    private readonly fetch: (req: Request) => Promise<Response>,
    private readonly closeStore: () => Promise<void>,
  ) {}

  static async open(kind: "sqlite" | "postgres"): Promise<World> {
    let store: Store;
    if (kind === "sqlite") store = SqliteStore.open(":memory:");
    else
      store = await openStore({
        dataDir: ":memory:",
        databaseUrl: await (await sharedCluster()).createDatabase(),
      });
    const app = createEdgeApp({ store });
    return new World(
      store,
      async (req) => app.fetch(req),
      async () => void (await store.close()),
    );
  }

  close(): Promise<void> {
    return this.closeStore();
  }

  /** A transport for `actor`, with the run's network fault (if any). */
  transport(actor: Actor, wire = new Wire()): Transport {
    return {
      baseUrl: "http://edge.world",
      send: async (request) => {
        if (wire.cut) throw new TypeError("fetch failed (the run's network is cut)");
        const method = request.method;
        const mutating = method !== "GET";
        const n = mutating ? ++wire.mutations : 0;
        const path = new URL(request.url).pathname;
        const hadRestriction = method === "PUT" && (await this.hasRestriction(path));
        const response = await this.fetch(request);
        await this.note(actor, method, path, response.clone(), hadRestriction);
        if (mutating && wire.fault && n === wire.fault.at) {
          if (wire.fault.kind === "cut") wire.cut = true;
          throw new TypeError("fetch failed (the answer was lost)");
        }
        return response;
      },
    };
  }

  client(actor: Actor, wire?: Wire): EdgeClient {
    return new EdgeClient(this.transport(actor, wire));
  }

  /** Everything on the service now: edges (with their routes and IP restrictions). */
  async snapshot(): Promise<{ https: HttpsEdge[]; tls: TlsEdge[]; routes: Route[] }> {
    const client = this.client("observer");
    const https: HttpsEdge[] = [];
    const tls: TlsEdge[] = [];
    for await (const e of client.allHttpsEdges()) https.push(e);
    for await (const e of client.allTlsEdges()) tls.push(e);
    return { https, tls, routes: https.flatMap((e) => e.routes) };
  }

  /** Whether an object exists now, by its ledger key. */
  async exists(key: string): Promise<boolean> {
    const { https, tls, routes } = await this.snapshot();
    if (key.startsWith("ipr:")) return tls.some((e) => `ipr:${e.id}` === key && e.ip_restriction !== null);
    return [...https, ...tls, ...routes].some((o) => o.id === key);
  }

  /** The canonical hostports served by more than one edge (invariant I3). */
  static sharedHostports(edges: ReadonlyArray<HttpsEdge | TlsEdge>): string[] {
    const seen = new Map<string, string>();
    const shared: string[] = [];
    for (const e of edges)
      for (const h of e.hostports.map(canonicalHostport)) {
        if (seen.has(h) && seen.get(h) !== e.id) shared.push(`${h} (${seen.get(h)} and ${e.id})`);
        seen.set(h, e.id);
      }
    return shared;
  }

  private async hasRestriction(path: string): Promise<boolean> {
    const m = /^\/edges\/tls\/([^/]+)\/ip_restriction$/.exec(path);
    if (!m) return false;
    const res = await this.fetch(new Request(`http://edge.world/edges/tls/${m[1]}`));
    if (!res.ok) return false;
    const edge = (await res.json()) as { ip_restriction: unknown };
    return edge.ip_restriction !== null;
  }

  /** The ledger: each object the service made, and who asked for it. */
  private async note(
    actor: Actor,
    method: string,
    path: string,
    response: Response,
    hadRestriction: boolean,
  ): Promise<void> {
    if (!response.ok || response.headers.get("idempotent-replayed") === "true") return;
    const made = (key: string) => {
      if (!this.madeBy.has(key)) this.madeBy.set(key, actor);
    };
    if (method === "POST" && /^\/edges\/(https|tls)$|^\/edges\/https\/[^/]+\/routes$/.test(path)) {
      const body = (await response.json()) as { id: string };
      made(body.id);
      return;
    }
    const restriction = /^\/edges\/tls\/([^/]+)\/ip_restriction$/.exec(path);
    if (method === "PUT" && restriction && !hadRestriction) {
      // A module made again after a delete is a new object: the last maker is its maker.
      this.madeBy.set(restrictionKey(restriction[1]!), actor);
    }
  }
}
