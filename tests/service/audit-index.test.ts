/**
 * The audit trail's index by object, kept off the request path (service/audit.ts,
 * auditObjectIndex): a lookup by object is complete whether the background indexer has run or
 * not (the tail after the index is scanned), pruning takes the index's rows with the events,
 * a store migrated from the schema with the inline index keeps every event and its seq, and on
 * PostgreSQL an event committed after a later seq (out of seq order) is never skipped.
 */
import Database from "libsql";
import { Client } from "pg";
import type { AuditEvent } from "../../sdk/contract";
import { auditRecord } from "../../service/audit";
import { SQL } from "../../service/store/statements";
import { MIGRATIONS, SqliteStore } from "../../service/store/store-sqlite";
import { PostgresStore } from "../../service/store/store-postgres";
import type { AuditFilter, Store } from "../../service/store/store";
import { sharedCluster } from "../support/postgres";
import { makeTempDir, removeDir } from "./helpers";

/** One event of a change to `objectId` (as the service writes it, after its change). */
const event = (objectId: string, n: number) =>
  auditRecord(
    "update_route",
    { kind: "route", id: objectId, edgeId: "edghttps_1" },
    { key: "k" },
    {
      description: { before: `d${n - 1}`, after: `d${n}` },
    },
  );

async function writeEvents(store: Store, objects: string[], perObject: number): Promise<void> {
  for (let n = 1; n <= perObject; n++) {
    for (const id of objects) {
      await store.write(async (tx) => {
        // A change first (an event always follows its change): the meta row stands in for it.
        await tx.run(metaSet, [`audit-index-test ${id} ${n}`, "x"]);
        await tx.insertAuditEvent(event(id, n));
      });
    }
  }
}

const metaSet = SQL.metaSet;

const list = (store: Store, f: Omit<AuditFilter, "limit"> & { limit?: number }): Promise<AuditEvent[]> =>
  store.read((tx) => tx.listAuditEvents({ limit: 1000, ...f }));

/** Indexes everything there is to index (PostgreSQL's bound takes a round to settle). */
async function indexAll(store: Store): Promise<void> {
  for (let i = 0; i < 5; i++) while ((await store.indexAuditEvents(7)) === 7);
}

const OBJECTS = ["rt_a", "rt_b", "rt_c", "rt_d"];

describe.each([["sqlite"], ["postgres"]])("the index by object on %s", (kind) => {
  let store: Store;
  let dir: string;
  let url: string | undefined;
  /** The index's rows, read directly. */
  let indexed: () => Promise<number[]>;

  beforeEach(async () => {
    dir = makeTempDir("audit-index");
    if (kind === "sqlite") {
      store = SqliteStore.open(dir, { auditIndexEveryMs: 0 });
      indexed = async () => {
        const db = new Database(`${dir}/edge.db`);
        try {
          return (
            db.prepare("SELECT seq FROM audit_by_object ORDER BY seq").all() as Array<{ seq: number }>
          ).map((r) => Number(r.seq));
        } finally {
          db.close();
        }
      };
    } else {
      url = await (await sharedCluster()).createDatabase();
      store = await PostgresStore.open(url, { auditIndexEveryMs: 0, poolSize: 4 });
      indexed = async () => {
        const c = new Client({ connectionString: url });
        await c.connect();
        try {
          return (await c.query<{ seq: string }>("SELECT seq FROM audit_by_object ORDER BY seq")).rows.map(
            (r) => Number(r.seq),
          );
        } finally {
          await c.end();
        }
      };
    }
  }, 60_000);
  afterEach(async () => {
    await store.close();
    removeDir(dir);
  });

  test("a lookup is the same before, during and after indexing, page by page", async () => {
    await writeEvents(store, OBJECTS, 6);
    const expected = async (id: string) => (await list(store, {})).filter((e) => e.object_id === id);
    const check = async () => {
      for (const id of OBJECTS) {
        const want = await expected(id);
        expect(want).toHaveLength(6);
        expect(await list(store, { objectId: id })).toEqual(want);
        // Pages of 4 through before_id, newest first, then filters on top of the object's.
        const first = await list(store, { objectId: id, limit: 4 });
        const rest = await list(store, { objectId: id, limit: 4, beforeSeq: Number(first[3]!.id.slice(4)) });
        expect([...first, ...rest]).toEqual(want);
        expect(await list(store, { objectId: id, key: "k" })).toEqual(want);
        expect(await list(store, { objectId: id, key: "other" })).toEqual([]);
        expect(await list(store, { objectId: id, since: want[2]!.time })).toEqual(
          want.filter((e) => e.time >= want[2]!.time),
        );
      }
    };
    expect(await indexed()).toEqual([]);
    await check(); // all in the tail
    await store.indexAuditEvents(7);
    await store.indexAuditEvents(7); // PostgreSQL: the first round only takes its bound
    expect((await indexed()).length).toBeGreaterThan(0);
    expect((await indexed()).length).toBeLessThan(24);
    await check(); // part indexed, part tail
    await indexAll(store);
    expect(await indexed()).toHaveLength(24);
    await check(); // all indexed
    await writeEvents(store, ["rt_a"], 2); // a new tail after a full index
    expect(await list(store, { objectId: "rt_a" })).toHaveLength(8);
  });

  test("pruning takes the index's rows with their events; a seq is never reused", async () => {
    await writeEvents(store, OBJECTS, 3);
    await indexAll(store);
    expect(await indexed()).toHaveLength(12);
    const [newest] = await list(store, { limit: 1 });
    const future = new Date(Date.now() + 60_000).toISOString();
    let pruned = 0;
    for (let n; (n = await store.pruneAuditEvents(future, 5)) > 0;) pruned += n;
    expect(pruned).toBe(12);
    expect(await list(store, {})).toEqual([]);
    expect(await indexed()).toEqual([]);
    // SQLite numbers max + 1 of an empty table as 1 unless told the floor.
    await writeEvents(store, ["rt_z"], 1);
    const [next] = await list(store, { objectId: "rt_z" });
    expect(Number(next!.id.slice(4))).toBeGreaterThan(Number(newest!.id.slice(4)));
  });
});

describe("PostgreSQL commits events out of seq order", () => {
  test("an event committed after a later seq is indexed, never skipped", async () => {
    const url = await (await sharedCluster()).createDatabase();
    const store = await PostgresStore.open(url, { auditIndexEveryMs: 0, poolSize: 4 });
    try {
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let inserted!: () => void;
      const early = new Promise<void>((r) => (inserted = r));
      // A takes its seq first and commits last.
      const a = store.write(async (tx) => {
        await tx.run(metaSet, ["audit-index-test early", "x"]);
        await tx.insertAuditEvent(event("rt_early", 1));
        inserted();
        await held;
      });
      await early;
      await writeEvents(store, ["rt_late"], 3);
      // Rounds while A is open: the index may take nothing at or above A's seq.
      for (let i = 0; i < 4; i++) await store.indexAuditEvents(100);
      const c = new Client({ connectionString: url });
      await c.connect();
      try {
        const seqs = async () =>
          (await c.query<{ seq: string }>("SELECT seq FROM audit_by_object ORDER BY seq")).rows.map((r) =>
            Number(r.seq),
          );
        expect(await seqs()).toEqual([]);
        release();
        await a;
        // Complete at once (the tail), and complete once indexed.
        expect(await list(store, { objectId: "rt_early" })).toHaveLength(1);
        await indexAll(store);
        expect(await seqs()).toHaveLength(4);
        expect(await list(store, { objectId: "rt_early" })).toHaveLength(1);
        expect(await list(store, { objectId: "rt_late" })).toHaveLength(3);
      } finally {
        release(); // a failed expectation must not leave A holding its connection
        await a.catch(() => undefined);
        await c.end();
      }
    } finally {
      await store.close();
    }
  }, 60_000);
});

describe("a SQLite trail of the schema with the inline index", () => {
  test("keeps every event and its seq, and the next seq follows AUTOINCREMENT's", async () => {
    const dir = makeTempDir("audit-index-old");
    try {
      // The schema before the index moved (schema 6), with events in it.
      const db = new Database(`${dir}/edge.db`);
      db.exec("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
      for (const m of MIGRATIONS.slice(0, 6)) db.exec(m);
      db.exec("INSERT INTO meta VALUES ('schema_version', '6')");
      const insert = db.prepare(
        "INSERT INTO audit_events (seq, time, operation, object_kind, object_id, edge_id, key_name, request_id, changes, truncated) VALUES (?, ?, 'update_route', 'route', ?, NULL, 'k', NULL, '{}', 0)",
      );
      insert.run(3, "2026-11-01T00:00:00.000Z", "rt_old");
      insert.run(9, "2026-11-02T00:00:00.000Z", "rt_old");
      insert.run(12, "2026-11-03T00:00:00.000Z", "rt_other");
      // AUTOINCREMENT's counter is past what is left: events up to 20 were pruned.
      db.exec("UPDATE sqlite_sequence SET seq = 20 WHERE name = 'audit_events'");
      db.close();
      const store = SqliteStore.open(dir, { auditIndexEveryMs: 0 });
      try {
        expect((await list(store, { objectId: "rt_old" })).map((e) => e.id)).toEqual(["aud_9", "aud_3"]);
        await indexAll(store);
        expect((await list(store, { objectId: "rt_old" })).map((e) => e.id)).toEqual(["aud_9", "aud_3"]);
        await writeEvents(store, ["rt_old"], 1);
        expect((await list(store, { objectId: "rt_old" })).map((e) => e.id)).toEqual([
          "aud_13",
          "aud_9",
          "aud_3",
        ]);
      } finally {
        await store.close();
      }
    } finally {
      removeDir(dir);
    }
  });
});
