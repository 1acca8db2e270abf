/**
 * The store procedures, each written once for both stores over the statements of ./statements:
 * bringing the schema up to date at open, checking the secrets key and the create fingerprint
 * key, a dump and its load (`edge-service migrate`), and the re-sealing of `secrets rotate`. Each
 * is a generator of statements (see Steps in ./store-driver), run in a transaction the store's
 * driver opens: synchronously on SQLite, awaited on PostgreSQL.
 */
import { CreateFingerprints, FINGERPRINT_KEY, keyNeededToUpgrade } from "./fingerprints";
import { META_TABLE } from "./migrations-shared";
import { type Raw, resealRouteModules, resealSamlKey, routeSealedKeyIds, SEALED_MODULES_LIKE } from "./rows";
import {
  parseKeyIds,
  SECRETS_KEY_ID,
  SECRETS_KEY_IDS,
  Secrets,
  type SecretsKey,
  sealedKeyId,
} from "../secrets";
import {
  anyRow,
  continueSequence,
  createRequestSet,
  insertRows,
  SQL,
  tableRows,
  TEXT_ENCODING,
} from "./statements";
import {
  DATA_TABLES,
  type DataTable,
  type Dialect,
  LIVE_SLACK_MS,
  type LiveServer,
  serversOnTarget,
  type SqlValue,
  type Statement,
  type StoreDump,
  targetNotEmpty,
} from "./store";
import type { Steps, StoreSchema } from "./store-driver";

/** Decodes rows that hold no secret (meta rows, a dump's columns as stored). */
const PLAIN = new Secrets();

/** The rows of `st`, decoded with `ring`. */
function* query<Row>(st: Statement<Row>, args: readonly SqlValue[], ring: Secrets): Steps<Row[]> {
  const { rows } = yield { st, args, want: "rows" };
  return rows.map((raw: Raw) => st.row(raw, ring));
}

/** Runs `st`: the rows it changed. */
function* run(st: Statement<unknown>, args: readonly SqlValue[]): Steps<number> {
  return (yield { st, args, want: "changes" }).changes;
}

/** A row of the meta table (no secret is opened reading one). */
function* meta(key: string): Steps<string | undefined> {
  const [value] = yield* query(SQL.metaGet, [key], PLAIN);
  return value;
}

/** Sets (or, with no value, removes) a row of the meta table. */
function* setMeta(key: string, value: string | undefined): Steps<void> {
  if (value === undefined) yield* run(SQL.metaDelete, [key]);
  else yield* run(SQL.metaSet, [key, value]);
}

/**
 * Why a store whose database keeps its text in the encoding its readiness row says (see
 * TEXT_ENCODING) cannot keep every character a client sends, or undefined when it can. SQLite
 * converts every string to its file's encoding and back. PostgreSQL converts to its database's:
 * LATIN1 cannot hold most characters (a write holding one fails), SQL_ASCII checks nothing.
 */
export function encodingProblem(rows: ReadonlyMap<string, string>, place: string): string | undefined {
  const encoding = rows.get(TEXT_ENCODING);
  if (encoding === undefined || /^UTF-?8$/i.test(encoding)) return undefined;
  return `${place} stores text in the ${encoding} encoding, not UTF-8, so it cannot keep every character a client may send (writes would fail): create a UTF8 database (createdb --encoding=UTF8 --template=template0 NAME), copy this one's data into it if it holds any (pg_dump --encoding=UTF8 OLD | psql NEW), and give the service its URL (--database or EDGE_DATABASE_URL)`;
}

/**
 * Brings the schema up to date, then checks the secrets key and opens the create fingerprint key
 * (what it answers), in the transaction the driver opened for it: one process at a time (SQLite's
 * BEGIN IMMEDIATE, PostgreSQL's advisory lock), so replicas starting together migrate once.
 */
export function* migrate(
  schema: StoreSchema,
  ring: Secrets,
  place: string,
): Steps<CreateFingerprints | undefined> {
  yield { ddl: META_TABLE };
  const notUtf8 = encodingProblem(new Map(yield* query(SQL.encoding, [], ring)), place);
  if (notUtf8 !== undefined) throw new Error(notUtf8);
  const [stored] = yield* query(SQL.schemaVersion, [], ring);
  const current = stored === undefined ? 0 : Number(stored);
  const latest = schema.migrations.length;
  if (current > latest) {
    throw new Error(
      `${place} was written by a newer edge-service (schema ${current} > ${latest}); upgrade pulumi-edge`,
    );
  }
  if (current < latest) {
    for (let v = current; v < latest; v++) yield { ddl: schema.migrations[v]! };
    const broken = yield* query(SQL.brokenReferences, [], ring);
    if (broken.length > 0) {
      throw new Error(
        `migrating ${place} to schema ${latest} broke ${broken.length} references (${JSON.stringify(broken[0])}); nothing was changed`,
      );
    }
    yield* setMeta("schema_version", String(latest));
  }
  // On the schema this code reads (the modules column of routes is a migration's).
  yield* checkSecretsKey(ring, place);
  return yield* openFingerprints(ring, place, current < schema.keyedFingerprints);
}

/**
 * Refuses a key ring that lacks a key the stored values are sealed under (see
 * Secrets.checkStoredKeys); records the first key on the first start with one, and the keys in
 * use after scanning a store of an earlier version (which recorded only one).
 */
function* checkSecretsKey(ring: Secrets, place: string): Steps<void> {
  const current = yield* meta(SECRETS_KEY_ID);
  const recorded = yield* meta(SECRETS_KEY_IDS);
  const record = ring.checkStoredKeys(
    recorded === undefined
      ? { current, inUse: yield* scanKeyIds(), scanned: true }
      : { current, inUse: parseKeyIds(recorded), scanned: false },
    place,
  );
  if (record === undefined) return;
  yield* setMeta(SECRETS_KEY_ID, record.current);
  yield* setMeta(SECRETS_KEY_IDS, record.inUse.join(","));
}

/** Every key id a stored value is sealed under (read from the rows themselves). */
function* scanKeyIds(): Steps<string[]> {
  const found = new Set<string>();
  const fingerprintKey = sealedKeyId((yield* meta(FINGERPRINT_KEY)) ?? "");
  if (fingerprintKey !== undefined) found.add(fingerprintKey);
  for (const raw of yield* query(SQL.sealedRoutes, [SEALED_MODULES_LIKE], PLAIN))
    routeSealedKeyIds(raw, found);
  for (const value of yield* query(SQL.samlKeyValues, [], PLAIN)) {
    const kid = sealedKeyId(value);
    if (kid !== undefined) found.add(kid);
  }
  return [...found];
}

/**
 * The create fingerprint key (./fingerprints): opened, or made by the first process to open the
 * store (in the migration's transaction: the first makes the key and commits it before the next
 * reads, so every replica holds the same one), sealed under the store's current key. On the
 * upgrade to the keyed form, every keyed create's earlier digest is rewritten under it.
 */
function* openFingerprints(
  ring: Secrets,
  place: string,
  upgrading: boolean,
): Steps<CreateFingerprints | undefined> {
  const key = ring.metaKey(
    yield* meta(FINGERPRINT_KEY),
    yield* meta(SECRETS_KEY_ID),
    `the create fingerprint key of ${place}`,
  );
  if (key?.record !== undefined) yield* setMeta(FINGERPRINT_KEY, key.record);
  const fingerprints = key && new CreateFingerprints(key.bytes);
  if (!upgrading) return fingerprints;
  const unkeyed = yield* query(SQL.unkeyedCreates, [], ring);
  if (unkeyed.length === 0) return fingerprints;
  if (fingerprints === undefined) throw keyNeededToUpgrade(place);
  for (const o of unkeyed) yield* run(createRequestSet(o.table), [fingerprints.upgraded(o.request), o.id]);
  return fingerprints;
}

/** Every row of every data table, and the create fingerprint key (see StoreDump), in a read transaction. */
export function* dump(): Steps<StoreDump> {
  const rows = (t: DataTable) => query(tableRows(t), [], PLAIN);
  return {
    edges: yield* rows("edges"),
    routes: yield* rows("routes"),
    route_saml_keys: yield* rows("route_saml_keys"),
    tls_ip_restrictions: yield* rows("tls_ip_restrictions"),
    api_keys: yield* rows("api_keys"),
    audit_events: yield* rows("audit_events"),
    create_fingerprint_key: (yield* meta(FINGERPRINT_KEY)) ?? null,
  };
}

/** Rows per INSERT of a load: PostgreSQL takes 65,535 parameters, SQLite 32,766. */
const LOAD_PARAMETERS = 30_000;

/**
 * Writes a dump into an empty store, in a write transaction; refuses a store that holds data or
 * that a server runs on. The copied values' keys are scanned (a key `ring` lacks refuses the whole
 * copy), and the copied objects' create fingerprint key replaces the store's own, sealed under its
 * current key: what fingerprints under it from then on.
 */
export function* load(
  copy: StoreDump,
  ring: Secrets,
  place: string,
  dialect: Dialect,
): Steps<CreateFingerprints | undefined> {
  const live = yield* query(SQL.serversLive, [LIVE_SLACK_MS], ring);
  if (live.length > 0) throw serversOnTarget(live, dialect);
  for (const t of DATA_TABLES) {
    if ((yield* query(anyRow(t), [], ring)).length > 0) throw targetNotEmpty(t, dialect);
  }
  // Derived from the events (none here): emptied, the indexer rebuilds it from the copied ones.
  yield* run(SQL.auditIndexClear, []);
  for (const t of DATA_TABLES) {
    const rows = copy[t];
    const columns = Object.keys(rows[0] ?? {});
    if (columns.length === 0) continue;
    const batch = Math.max(1, Math.floor(LOAD_PARAMETERS / columns.length));
    for (let i = 0; i < rows.length; i += batch) {
      const slice = rows.slice(i, i + batch);
      yield* run(
        insertRows(t, columns, slice.length),
        slice.flatMap((row) => columns.map((c) => row[c] ?? null)),
      );
    }
    // Seqs copied as they were (routes' order, audit events' ids): new rows number after them.
    if (columns.includes("seq")) yield* query(continueSequence(t), [], ring);
  }
  yield* setMeta(SECRETS_KEY_IDS, undefined);
  yield* checkSecretsKey(ring, place);
  const copied = copy.create_fingerprint_key;
  if (copied === null) return undefined;
  const key = ring.metaKey(
    copied,
    yield* meta(SECRETS_KEY_ID),
    `the create fingerprint key copied into ${place}`,
  );
  if (key === undefined) return undefined;
  yield* setMeta(FINGERPRINT_KEY, key.record ?? copied);
  return new CreateFingerprints(key.bytes);
}

/**
 * Re-seals every stored secret under `to` (see Store.resealSecrets), in a transaction that holds
 * every other writer off: `check` is told the servers alive first (a server's beat is a write, so
 * none changes before the commit), and what it throws aborts it all. Each secret is opened with
 * `ring` (the store's keys and `to`); the key every writer seals under becomes `to`.
 */
export function* reseal(
  ring: Secrets,
  to: SecretsKey,
  place: string,
  check?: (live: LiveServer[]) => void,
): Steps<{ secrets: number; servers: LiveServer[] }> {
  const servers = yield* query(SQL.serversLive, [LIVE_SLACK_MS], ring);
  check?.(servers);
  let secrets = 0;
  for (const raw of yield* query(SQL.routeModulesAll, [], ring)) {
    const [id, modules, count] = resealRouteModules(raw, ring, ring);
    if (count === 0) continue;
    yield* run(SQL.routeModulesSet, [modules, id]);
    secrets += count;
  }
  for (const raw of yield* query(SQL.samlKeysAll, [], ring)) {
    const [routeId, privateKey] = resealSamlKey(raw, ring, ring);
    yield* run(SQL.samlKeySet, [privateKey, routeId]);
    secrets++;
  }
  const fingerprintKey = ring.metaKey(
    yield* meta(FINGERPRINT_KEY),
    to.id,
    `the create fingerprint key of ${place}`,
  );
  if (fingerprintKey?.record !== undefined) yield* setMeta(FINGERPRINT_KEY, fingerprintKey.record);
  yield* setMeta(SECRETS_KEY_ID, to.id);
  yield* setMeta(SECRETS_KEY_IDS, to.id);
  return { secrets, servers };
}
