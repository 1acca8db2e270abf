/**
 * Every row of every data table of a store's database, read through a connection of its own
 * (one per database, kept open: suites take thousands of fingerprints): equal fingerprints
 * before and after a request prove that the request changed nothing.
 */
import Database from "libsql";
import { Client } from "pg";
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
 * The five tables of a PostgreSQL database in one statement (so one snapshot), each row as
 * PostgreSQL writes it as text, sorted, in the server: what the store's `dump()` would give less
 * its decoding, and less the audit trail, which the dump reads too and which grows with every
 * accepted request (a fuzz run's thousands made each fingerprint slower than the last).
 */
const PG_FINGERPRINT = TABLES.map(
  (t) =>
    `SELECT '${t}' AS t, coalesce((SELECT string_agg(r::text, E'\\n' ORDER BY r::text) FROM ${t} r), '') AS rows`,
).join(" UNION ALL ");
const pgClients = new Map<string, Promise<Client>>();

function pgClient(url: string): Promise<Client> {
  let client = pgClients.get(url);
  if (!client) {
    const c = new Client({ connectionString: url });
    // A restarted or stopped cluster cuts it: the next fingerprint connects again.
    const forget = () => pgClients.delete(url);
    c.on("error", forget);
    c.on("end", forget);
    client = c.connect().then(() => c);
    client.catch(forget);
    pgClients.set(url, client);
  }
  return client;
}

afterAll(async () => {
  const open = [...pgClients.values()];
  pgClients.clear();
  await Promise.all(open.map(async (c) => (await c.catch(() => undefined))?.end().catch(() => undefined)));
});

/**
 * The same for a store of either kind: SQLite through the connection above, PostgreSQL through
 * a connection of its own to the store's database (the store's own dump where the URL's
 * password is redacted in its location).
 */
export async function storeFingerprint(store: Store): Promise<string> {
  if (store.kind === "sqlite") return fingerprint(store);
  if (!new URL(store.location).password) {
    const { rows } = await (
      await pgClient(store.location)
    ).query<{ t: string; rows: string }>(PG_FINGERPRINT);
    const byTable = new Map(rows.map((r) => [r.t, r.rows]));
    return TABLES.map((t) => `${t}:${byTable.get(t)}`).join("\n");
  }
  const dump = await store.dump();
  return TABLES.map((t) => `${t}:${JSON.stringify(dump[t as keyof typeof dump])}`).join("\n");
}
