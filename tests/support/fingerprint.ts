/**
 * Every row of every data table of a store's database, read through a connection of its own
 * (one per database, kept open: suites take thousands of fingerprints): equal fingerprints
 * before and after a request prove that the request changed nothing.
 */
import Database from "libsql";
import type { Store } from "../../service/store/store";

const TABLES = ["edges", "routes", "route_saml_keys", "tls_ip_restrictions", "api_keys"];
const connections = new Map<string, Database.Database>();

export function fingerprint(store: Pick<Store, "location">): string {
  if (store.location === ":memory:") throw new Error("fingerprint needs a store on disk");
  let db = connections.get(store.location);
  if (!db) {
    db = new Database(store.location);
    db.pragma("busy_timeout = 10000");
    connections.set(store.location, db);
  }
  const read = db;
  return read
    .transaction(() =>
      TABLES.map(
        (t) => `${t}:${JSON.stringify(read.prepare(`SELECT * FROM ${t} ORDER BY 1, 2`).all())}`,
      ).join("\n"),
    )
    .deferred();
}

/**
 * The same for a store of either kind: SQLite through the connection above, PostgreSQL through
 * the store's own dump (one REPEATABLE READ snapshot).
 */
export async function storeFingerprint(store: Store): Promise<string> {
  if (store.kind === "sqlite") return fingerprint(store);
  const dump = await store.dump();
  return TABLES.map((t) => `${t}:${JSON.stringify(dump[t as keyof typeof dump])}`).join("\n");
}
