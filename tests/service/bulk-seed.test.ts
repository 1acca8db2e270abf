/**
 * EdgeService.createRoutes: many routes of one edge in one transaction, each checked as a POST
 * is (the bulk seeding of the 100,000-route benchmarks), on both stores. A bad or duplicate body
 * anywhere in a batch stores nothing of it.
 */
import { ApiError } from "../../service/errors";
import { EdgeService } from "../../service/service";
import type { Store } from "../../service/store/store";
import { PostgresStore } from "../../service/store/store-postgres";
import { SqliteStore } from "../../service/store/store-sqlite";
import { sharedCluster } from "../support/postgres";
import { makeTempDir, removeDir } from "./helpers";

const dirs: string[] = [];
const STORES: Array<[string, () => Promise<Store>]> = [
  [
    "SQLite",
    async () => {
      const dir = makeTempDir("bulk");
      dirs.push(dir);
      return SqliteStore.open(dir);
    },
  ],
  ["PostgreSQL", async () => PostgresStore.open(await (await sharedCluster()).createDatabase())],
];

afterAll(() => {
  for (const d of dirs) removeDir(d);
});

const body = (i: number) => ({
  match_type: "path_prefix",
  match: `/bulk/${i}`,
  backend: { backend_id: `b${i % 7}` },
});

describe.each(STORES)("bulk seeding on %s", (_name, open) => {
  it("stores 2,000 routes in batches, newest first, each rendered as a POST would be", async () => {
    const store = await open();
    try {
      const service = new EdgeService(store);
      const ctx = { baseUrl: "http://edge.test" };
      const edge = await service.createEdge("https", {}, ctx);
      const ids: string[] = [];
      for (let i = 0; i < 2000; i += 500) {
        ids.push(
          ...(await service.createRoutes(
            edge.id,
            Array.from({ length: 500 }, (_, k) => body(i + k)),
          )),
        );
      }
      expect(new Set(ids).size).toBe(2000);
      const page = await service.listRoutes(edge.id, { limit: 10 }, ctx);
      expect(page.routes.map((r) => r.id)).toEqual(ids.slice(-10).reverse());
      expect(page.routes[0]!.match).toBe("/bulk/1999");
      expect(page.routes[0]!.backend).toEqual({
        enabled: true,
        backend: { id: "b4", uri: "http://edge.test/backends/b4" },
      });

      // A duplicate inside a batch: 409, and none of the batch is stored.
      const bad = [body(5000), body(5001), body(3)];
      await expect(service.createRoutes(edge.id, bad)).rejects.toMatchObject({ kind: "conflict" });
      // An invalid body: 400 before anything is written.
      await expect(
        service.createRoutes(edge.id, [body(6000), { match_type: "nope" }]),
      ).rejects.toBeInstanceOf(ApiError);
      const after = await service.listRoutes(edge.id, { limit: 1 }, ctx);
      expect(after.routes[0]!.id).toBe(ids[ids.length - 1]);
    } finally {
      await store.close();
    }
  });
});
