/**
 * SQLite's group commit (SqliteStore.write): the writes queued in one turn of the event loop share
 * one transaction, each in a savepoint. What must hold: nobody is told "stored" before the group's
 * COMMIT, a failed write is rolled back alone, and when SQLite ends the whole transaction the
 * group's earlier writes fail too instead of being reported stored. A second connection on the
 * same file (another process would see the same) says what was committed when.
 */
import { batchedSink } from "../../service/http/log";
import path from "node:path";
import { type EdgeRow, StoreUnavailable, type StoreTx, UniqueViolation } from "../../service/store/store";
import { SqliteStore } from "../../service/store/store-sqlite";
import { makeTempDir, removeDir } from "./helpers";

const edge = (id: string): Omit<EdgeRow, "seq"> => ({
  id,
  kind: "https",
  description: "",
  metadata: "",
  hostports: [],
  created_at: new Date().toISOString(),
});

describe("SqliteStore: group commit", () => {
  let dir: string;
  let store: SqliteStore;
  /** Another connection on the same database: it sees committed data only. */
  let other: SqliteStore;
  beforeEach(() => {
    dir = makeTempDir("group-commit");
    store = SqliteStore.open(dir);
    other = SqliteStore.open(dir);
  });
  afterEach(async () => {
    await store.close();
    await other.close();
    removeDir(dir);
  });

  const committed = (id: string) => other.read((tx) => tx.getEdge("https", id)).then((e) => e?.id);

  it("commits the writes queued together at once, and answers none before the COMMIT", async () => {
    let firstAnswered = false;
    const seen: Record<string, unknown> = {};
    const first = store.write((tx) => tx.insertEdge(edge("edghts_g1"))).then(() => (firstAnswered = true));
    const second = store.write(async (tx: StoreTx) => {
      // The first write is done in this transaction, not yet committed, not yet answered.
      seen.inTransaction = (await tx.getEdge("https", "edghts_g1"))?.id;
      seen.committed = await committed("edghts_g1");
      seen.firstAnswered = firstAnswered;
      await tx.insertEdge(edge("edghts_g2"));
    });
    await Promise.all([first, second]);
    expect(seen).toEqual({ inTransaction: "edghts_g1", committed: undefined, firstAnswered: false });
    expect([await committed("edghts_g1"), await committed("edghts_g2")]).toEqual(["edghts_g1", "edghts_g2"]);
  });

  it("a write waited for alone is committed before it is answered", async () => {
    await store.write((tx) => tx.insertEdge(edge("edghts_alone")));
    expect(await committed("edghts_alone")).toBe("edghts_alone");
  });

  it("rolls back a failed write alone: the group's others are stored", async () => {
    const results = await Promise.allSettled([
      store.write((tx) => tx.insertEdge(edge("edghts_ok1"))),
      store.write(async (tx) => {
        await tx.insertEdge(edge("edghts_failed"));
        throw new Error("the request was refused after its insert");
      }),
      store.write((tx) => tx.insertEdge(edge("edghts_ok2"))),
      // A constraint the database itself refuses: the same id again.
      store.write((tx) => tx.insertEdge(edge("edghts_ok1"))),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled", "rejected"]);
    expect((results[1] as PromiseRejectedResult).reason).toEqual(
      new Error("the request was refused after its insert"),
    );
    expect((results[3] as PromiseRejectedResult).reason).toBeInstanceOf(UniqueViolation);
    expect(await Promise.all(["edghts_ok1", "edghts_failed", "edghts_ok2"].map(committed))).toEqual([
      "edghts_ok1",
      undefined,
      "edghts_ok2",
    ]);
  });

  it("rolls back a failed first write, and the writes queued behind it still commit", async () => {
    const results = await Promise.allSettled([
      store.write(async (tx) => {
        await tx.insertEdge(edge("edghts_first_failed"));
        throw new Error("refused");
      }),
      store.write((tx) => tx.insertEdge(edge("edghts_after"))),
    ]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "fulfilled"]);
    expect([await committed("edghts_first_failed"), await committed("edghts_after")]).toEqual([
      undefined,
      "edghts_after",
    ]);
  });

  it("when SQLite ends the whole transaction, the group's earlier writes fail with it, never reported stored", async () => {
    // The store's one connection (its driver's, see service/store/store-sqlite.ts).
    const db = (store as unknown as { driver: { db: { exec(sql: string): void } } }).driver.db;
    const gone = new Error("disk I/O error (the transaction was rolled back)");
    const results = await Promise.allSettled([
      store.write((tx) => tx.insertEdge(edge("edghts_lost"))),
      store.write(async (tx) => {
        await tx.insertEdge(edge("edghts_cause"));
        // What SQLite does on some I/O errors and a full disk: the whole transaction rolled back.
        db.exec("ROLLBACK");
        throw gone;
      }),
      store.write((tx) => tx.insertEdge(edge("edghts_next"))),
    ]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected", "fulfilled"]);
    expect((results[0] as PromiseRejectedResult).reason).toBe(gone);
    expect(await Promise.all(["edghts_lost", "edghts_cause", "edghts_next"].map(committed))).toEqual([
      undefined,
      undefined,
      "edghts_next",
    ]);
  });

  it("more writes than a group holds: every one committed, in groups one after another", async () => {
    const writes = Array.from({ length: 40 }, (_, i) =>
      store.write((tx) => tx.insertEdge(edge(`edghts_r${i}`))),
    );
    await Promise.all(writes);
    expect((await other.read((tx) => tx.listEdges("https", 100))).length).toBe(40);
  });
});

describe("SqliteStore: writes queued as the store closes", () => {
  it("are refused, and the process goes on", async () => {
    const dir = makeTempDir("group-close");
    try {
      const store = SqliteStore.open(dir);
      const writes = [1, 2, 3].map((i) => store.write((tx) => tx.insertEdge(edge(`edghts_c${i}`))));
      await store.close();
      // Before the guard, the group ran its BEGIN on the closed connection: libsql aborted the process.
      for (const w of await Promise.allSettled(writes)) {
        expect(w.status).toBe("rejected");
        expect((w as PromiseRejectedResult).reason).toBeInstanceOf(StoreUnavailable);
      }
      await expect(store.write((tx) => tx.insertEdge(edge("edghts_after_close")))).rejects.toThrow(
        `the store at ${path.join(dir, "edge.db")} is closed`,
      );
      await expect(store.read((tx) => tx.listEdges("https", 1))).rejects.toBeInstanceOf(StoreUnavailable);
      // What a GET asks first (its cache check).
      expect(() => store.changeCounter()).toThrow(StoreUnavailable);
    } finally {
      removeDir(dir);
    }
  });
});

describe("batchedSink (serve's log)", () => {
  it("writes the lines of one turn of the event loop in one write, in order", async () => {
    const writes: string[] = [];
    const { sink } = batchedSink((text) => writes.push(text));
    sink("a");
    sink("b");
    expect(writes).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    sink("c");
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toEqual(["a\nb\n", "c\n"]);
  });

  it("flush writes what is queued at once (serve calls it on exit)", () => {
    const writes: string[] = [];
    const { sink, flush } = batchedSink((text) => writes.push(text));
    sink("last words");
    flush();
    expect(writes).toEqual(["last words\n"]);
    flush();
    expect(writes).toEqual(["last words\n"]);
  });
});
