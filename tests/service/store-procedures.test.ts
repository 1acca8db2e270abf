/**
 * Every store procedure, tried on both stores. The procedures are written once over the driver
 * seam (SqlStore in service/store/store-sql.ts, running the generators of store-steps.ts), so a
 * procedure that works on one store may still fail on the other's driver (a dialect hook, a type a
 * driver binds otherwise, a transaction mode): each is run here on SQLite and on PostgreSQL, and
 * the last test of each store enumerates SqlStore's methods and fails naming any that this suite
 * did not call, so a new procedure is tried on both stores before it lands (CONTRIBUTING.md,
 * "Adding a statement").
 */
import { EdgeService, type RequestContext } from "../../service/service";
import { Secrets, SecretsKey } from "../../service/secrets";
import type { Store } from "../../service/store/store";
import { SqlStore } from "../../service/store/store-sql";
import { SQL } from "../../service/store/statements";
import { STORE_PLACES, type StorePlace } from "./helpers";

const ctx: RequestContext = { baseUrl: "http://edge.test" };
const key = (fill: number) => SecretsKey.parse(Buffer.alloc(32, fill).toString("base64"), "a test key");
const K1 = key(1);
const K2 = key(2);

/** SqlStore's methods that are not procedures a caller runs, and why. */
const NOT_PROCEDURES: Record<string, string> = {
  constructor: "the class itself",
  opened: "protected: each store's open calls it",
  transaction: "private: read and write go through it",
};

/** SqlStore's own methods (not its getters) that a caller runs: the store's procedures. */
const PROCEDURES = Object.getOwnPropertyNames(SqlStore.prototype).filter(
  (name) =>
    typeof Object.getOwnPropertyDescriptor(SqlStore.prototype, name)?.value === "function" &&
    !(name in NOT_PROCEDURES),
);

/** `store`, recording the name of every method called on it into `tried`. */
function recorded(store: Store, tried: Set<string>): Store {
  return new Proxy(store, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== "function" || typeof prop !== "string") return value;
      return (...args: unknown[]): unknown => {
        tried.add(prop);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

test("the procedures are enumerated, and every name excused is a method of SqlStore", () => {
  expect(PROCEDURES).toEqual(expect.arrayContaining(["write", "read", "dump", "load", "resealSecrets"]));
  for (const name of Object.keys(NOT_PROCEDURES))
    expect(Object.getOwnPropertyNames(SqlStore.prototype)).toContain(name);
});

describe.each(STORE_PLACES)("%s", (kind, makePlace) => {
  const tried = new Set<string>();
  let place: StorePlace;
  let store: Store;
  let service: EdgeService;
  let edgeId: string;
  const open = async (place: StorePlace, secrets?: Secrets) => recorded(await place.open(secrets), tried);

  beforeAll(async () => {
    place = await makePlace();
    store = await open(place, new Secrets([K1, K2], K1));
    service = new EdgeService(store);
    edgeId = (await service.createEdge("https", { description: "procedures" }, ctx)).id;
  }, 120_000);
  afterAll(async () => {
    await store?.close();
    place?.remove();
  });

  test("write and read: what a write transaction wrote, a read transaction reads", async () => {
    await store.write((tx) => tx.run(SQL.metaSet, ["procedures", "written"]));
    expect(await store.read((tx) => tx.query(SQL.metaGet, ["procedures"]))).toEqual(["written"]);
  });

  test("createFingerprint: the same request gives the same fingerprint, another request another", () => {
    const a = store.createFingerprint('POST /edges/https {"description":"a"}');
    expect(store.createFingerprint('POST /edges/https {"description":"a"}')).toBe(a);
    expect(store.createFingerprint('POST /edges/https {"description":"b"}')).not.toBe(a);
  });

  test("changeCounter moves with a write", async () => {
    const before = await store.changeCounter();
    await service.createRoute(edgeId, { match_type: "path_prefix", match: "/counter" }, ctx);
    expect(await store.changeCounter()).not.toBe(before);
  });

  test("whyNotReady: a store just opened is ready; unavailableSeen: it met no sign of a database gone", async () => {
    expect(await store.whyNotReady()).toBeUndefined();
    expect(store.unavailableSeen?.()).toBe(0);
  });

  test("requestDeadline: none from a store opened without a database deadline", () => {
    // SQLite never has one (its file answers or fails); PostgreSQL's, given --database-deadline,
    // is measured against a silent database in tests/service/pg-deadlines.test.ts.
    expect(store.requestDeadline?.(performance.now())).toBeUndefined();
  });

  test("probeWrite writes its row of the store's metadata", async () => {
    const before = Date.now();
    await store.probeWrite();
    const [at] = await store.read((tx) => tx.query(SQL.metaGet, ["write_probe"]));
    expect(Date.parse(String(at))).toBeGreaterThanOrEqual(before - 1000);
  });

  test("pruneAuditEvents deletes the oldest events before a time, at most as many as asked", async () => {
    const count = async () => (await service.listAuditEvents({ limit: 100 }, ctx)).audit_events.length;
    const events = await count();
    expect(events).toBeGreaterThanOrEqual(2);
    expect(await store.pruneAuditEvents(new Date(Date.now() + 60_000).toISOString(), 1)).toBe(1);
    expect(await count()).toBe(events - 1);
    expect(await store.pruneAuditEvents("2000-01-01T00:00:00Z", 100)).toBe(0);
  });

  test("indexAuditEvents adds the events not yet indexed by object, then none", async () => {
    await service.createRoute(edgeId, { match_type: "path_prefix", match: "/indexed" }, ctx);
    // On PostgreSQL a round first takes its bound; a later one indexes up to it once it settled.
    let added = 0;
    for (let round = 0; round < 3 && added === 0; round++) added += await store.indexAuditEvents(1000);
    expect(added).toBeGreaterThan(0);
    expect(await store.indexAuditEvents(1000)).toBe(0);
  });

  test("dump, then load into an empty store: the same rows; load refuses a store that holds data", async () => {
    const copy = await store.dump();
    expect(copy.routes.length).toBeGreaterThan(0);
    const other = await makePlace();
    const target = await open(other, new Secrets([K1, K2], K1));
    try {
      await target.load(copy);
      expect(await target.dump()).toEqual(copy);
      await expect(target.load(copy)).rejects.toThrow(/already holds data/);
    } finally {
      await target.close();
      other.remove();
    }
    await expect(target.read((tx) => tx.getEdge("https", edgeId))).rejects.toThrow();
  });

  test("resealSecrets: every secret sealed under the new key, readable with it alone", async () => {
    const route = await service.createRoute(
      edgeId,
      {
        match_type: "path_prefix",
        match: "/sealed",
        webhook_verification: { provider: "github", secret: "s3cret" },
      },
      ctx,
    );
    const resealed = await store.resealSecrets(K2);
    expect(resealed.secrets).toBeGreaterThan(0);
    await store.close();
    store = await open(place, new Secrets([K2]));
    service = new EdgeService(store);
    expect((await service.getRoute(edgeId, route.id, ctx)).webhook_verification?.secret).toBe("s3cret");
  });

  test(`every procedure of the store was tried on ${kind}`, () => {
    expect(PROCEDURES.filter((name) => !tried.has(name))).toEqual([]);
  });
});
