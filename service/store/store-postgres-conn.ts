/**
 * How the statements of one PostgreSQL transaction go over the wire (its Conn, see
 * ./store-driver), and what its errors mean to the store. The transaction's start and its
 * COMMIT ride with its statements, their values written in as SQL literals: a round trip saved
 * twice per write (BENCHMARKS.md; what a change here must be tested with: CONTRIBUTING.md).
 */
import pg from "pg";
import { errorField, errorMessage } from "../../sdk/contract";
import type { Raw } from "./rows";
import {
  type Deadline,
  ParentMissing,
  type SqlValue,
  type Statement,
  StoreUnavailable,
  UniqueViolation,
} from "./store";
import type { Conn } from "./store-driver";

/** A value as node-postgres binds it (a BYTEA column's as a Buffer). */
export type Value = string | number | Buffer | null;

const UNAVAILABLE_CODES: ReadonlySet<string> = new Set([
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now
  "53300", // too_many_connections
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/**
 * What the server ended because a deadline of the service passed (see PgDriver's deadline): the
 * statement (statement_timeout) or the transaction left idle (idle_in_transaction_session_timeout).
 * Rolled back, nothing done: a 503 the client retries, like a database out of reach.
 */
const DEADLINE_CODES: ReadonlySet<string> = new Set([
  "57014", // query_canceled: statement_timeout
  "25P03", // idle_in_transaction_session_timeout
]);

function isUnavailable(e: unknown): boolean {
  const found = errorField(e, "code");
  const code = typeof found === "string" ? found : "";
  if (code.startsWith("08") || UNAVAILABLE_CODES.has(code) || DEADLINE_CODES.has(code)) return true;
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|Connection closed/i.test(
    errorMessage(e),
  );
}

/** A pg error as the store's own: unique key → UniqueViolation, lost database → StoreUnavailable. */
export function translate(e: unknown): unknown {
  if (e instanceof StoreUnavailable || e instanceof UniqueViolation || e instanceof ParentMissing) return e;
  const code = errorField(e, "code");
  if (code === "23505") return new UniqueViolation(errorMessage(e));
  if (code === "23503") return new ParentMissing(errorMessage(e));
  if (isUnavailable(e)) {
    return new StoreUnavailable(
      `PostgreSQL cannot be reached (${errorMessage(e)}); the request was not acknowledged: retry shortly`,
      { cause: e },
    );
  }
  return e;
}

/**
 * What a transaction on a connection says of itself while it runs: whether its COMMIT may be on
 * its way to the server. Until the deadline, only the deadline's server-side bound keeps such a
 * COMMIT from landing after its client was told 503: its connection is never given up earlier
 * (see PgDriver's holds).
 */
export interface InFlight {
  committing: boolean;
}

/**
 * How long before the deadline a COMMIT's statement must be over on the server: the time its
 * answer takes to come back and the COMMIT's own flush. A write that could still be running on
 * the server when its client is told 503 is cancelled by the server instead.
 */
export const COMMIT_MARGIN_MS = 250;

/** The deadline passed: the transaction is given up, its connection cut, and nothing committed. */
export function deadlinePassed(deadline: Deadline, where: string): StoreUnavailable {
  return new StoreUnavailable(
    `PostgreSQL did not answer within ${deadline.what} (${where}); the transaction was rolled back and its connection dropped: retry shortly`,
  );
}

/** Advisory lock keys: (class, key) pairs of pg_advisory_xact_lock(int4, int4). */
export const LOCK_CLASS_SCHEMA = 0x65646765; // "edge"
const LOCK_CLASS_CREATE_KEY = 0x65646769;
/** Shared by every write transaction, exclusive for `secrets rotate` (see the driver's openings). */
export const LOCK_CLASS_SECRETS = 0x65646773;
/** What a keyed create locks (see PgConn.lockCreateKey). */
const CREATE_KEY_LOCK = { name: "create_key_lock", text: "SELECT pg_advisory_xact_lock($1, hashtext($2))" };

/** A statement sent in a simple query (see PgConn): its values written in as literals. */
export interface InlineStep {
  readonly name: string;
  readonly text: string;
  /** The values as SQL literals (sqlLiterals): "" for none. */
  readonly literals: string;
}

/**
 * A transaction's start: `begin` (BEGIN and what must come first: the locks of a rotation or a
 * migration, plain SQL), then statements taken first (a write's shared lock), run before any other.
 */
export interface Opening {
  readonly begin: string;
  readonly steps: readonly InlineStep[];
}

/**
 * A string as an SQL literal, read the same whatever standard_conforming_strings says (the rule
 * of the driver's escapeLiteral, with native replaces: a route's modules are kilobytes of JSON):
 * quotes doubled; with a backslash, an E'' literal with backslashes doubled. Undefined for a NUL.
 */
function stringLiteral(v: string): string | undefined {
  if (v.includes("\0")) return undefined;
  const quoted = v.includes("'") ? v.replaceAll("'", "''") : v;
  return v.includes("\\") ? ` E'${quoted.replaceAll("\\", "\\\\")}'` : `'${quoted}'`;
}

/**
 * A statement's values as the arguments of an EXECUTE, `(v1, v2, ...)` ("" for none), written so
 * that the prepared statement's parameters get what the driver would have bound (see PgConn):
 * strings and numbers quoted as the driver sends them, as text (the driver's escapeLiteral, or as
 * they are when they hold nothing to escape), so each parameter's type reads them alike; a Buffer
 * (a BYTEA column's, which the driver binds as bytes) in BYTEA's hex form, ` E'\\x<hex>'` (a
 * constant, unlike a call of decode()). Undefined when a value cannot be written: a string with a
 * NUL (no SQL text holds one; PostgreSQL refuses it as a bound value too), a number that is not
 * finite.
 */
export function sqlLiterals(values: readonly Value[]): string | undefined {
  const out: string[] = [];
  for (const v of values) {
    if (v === null) out.push("NULL");
    else if (typeof v === "string") {
      const literal = stringLiteral(v);
      if (literal === undefined) return undefined;
      out.push(literal);
    } else if (typeof v === "number" && Number.isFinite(v)) out.push(pg.escapeLiteral(String(v)));
    else if (Buffer.isBuffer(v)) out.push(` E'\\\\x${v.toString("hex")}'`);
    else return undefined;
  }
  return out.length === 0 ? "" : `(${out.join(", ")})`;
}

/**
 * A statement sent in a simple query: PREPAREd under a name of its own, apart from the driver's
 * protocol-level name for it (one namespace per session).
 */
const inlineStep = (name: string, text: string, literals: string): InlineStep => ({
  name: `inline_${name}`,
  text,
  literals,
});

/** The statements each connection has PREPAREd for simple queries (see PgConn). */
const preparedInline = new WeakMap<pg.PoolClient, Set<string>>();
const STATEMENT_NAME = /^[a-z_][a-z0-9_]*$/;

/**
 * The statements of one transaction on one pooled connection.
 *
 * Neither the transaction's start (BEGIN, and a write's locks) nor its COMMIT costs a round trip
 * of its own (a PATCH costs 2, a keyed create 3):
 * - the start goes with the first statement, in one simple query: `BEGIN; EXECUTE
 *   inline_secrets_lock_shared; EXECUTE inline_route_get_locked('edghtsrt_...', 'edghts_...')`,
 *   a keyed create's key lock along;
 * - a write the service says is the transaction's last (WriteEnd) takes the COMMIT along:
 *   `EXECUTE inline_route_update_with_event(...); COMMIT`. If it fails, PostgreSQL runs nothing
 *   after it in the query: the COMMIT never runs, and the driver rolls back.
 * node-postgres sends one statement per round trip and binds values only in the extended protocol,
 * so these run as statements PREPAREd once per connection, their values written in (sqlLiterals);
 * a value that cannot be written sends the start, or the COMMIT, on its own.
 * Each statement of a simple query has its own snapshot under READ COMMITTED (the transaction's
 * first under REPEATABLE READ), taken after the locks before it: the same order as one round trip
 * each. A transaction that sends no statement is never opened, and needs no COMMIT.
 */
export class PgConn implements Conn {
  /** A change and its audit event in one statement: one round trip less per change. */
  readonly eventsInWrites = true;
  /** The transaction's start while it is not sent: it goes with the first statement (see send). */
  private opening?: Opening;
  /** Committed with its last write (see WriteEnd): the driver sends no COMMIT. */
  private committed = false;

  constructor(
    private readonly client: pg.PoolClient,
    opening: Opening,
    /** Write transactions lock the rows they read to change. */
    readonly locking: boolean,
    /** When the transaction must be over; none: unbounded (migrations, `secrets rotate`). */
    private readonly deadline?: Deadline,
    /** Told when a COMMIT goes out (see InFlight). */
    private readonly inFlight: InFlight = { committing: false },
  ) {
    this.opening = opening;
  }

  /** Whether the transaction was opened on its connection and is not over: it needs COMMIT or ROLLBACK. */
  get open(): boolean {
    return this.opening === undefined && !this.committed;
  }

  async rows(st: Statement<unknown>, args: readonly SqlValue[], last: boolean): Promise<Raw[]> {
    return (await this.send(st.name, st.postgres, this.values(st, args), last)).rows;
  }

  async changes(st: Statement<unknown>, args: readonly SqlValue[], last: boolean): Promise<number> {
    return (await this.send(st.name, st.postgres, this.values(st, args), last)).rowCount ?? 0;
  }

  async first(st: Statement<unknown>, args: readonly SqlValue[]): Promise<Raw | undefined> {
    return (await this.rows(st, args, false))[0];
  }

  /** A migration's DDL, in a simple query of its own after the transaction's start. */
  async exec(ddl: string): Promise<void> {
    try {
      if (this.opening !== undefined) await this.batch(this.opening, [], false);
      await this.client.query(ddl);
    } catch (e) {
      throw translate(e);
    }
  }

  /** The values of `st` as node-postgres binds them (./statements makes each one a Value). */
  private values(st: Statement<unknown>, args: readonly SqlValue[]): Value[] {
    return st.values.postgres(args) as Value[];
  }

  /**
   * A named statement (prepared once per connection). The first also opens the transaction; one
   * sent `last` (see WriteEnd) also commits it: each in the same round trip, when its values can
   * be literals (sqlLiterals), and apart otherwise.
   */
  private async send(
    name: string,
    text: string,
    values: Value[],
    last = false,
  ): Promise<pg.QueryResult<Raw>> {
    try {
      const opening = this.opening;
      if (opening === undefined && !last) return await this.client.query<Raw>({ name, text, values });
      const literals = STATEMENT_NAME.test(name) ? sqlLiterals(values) : undefined;
      if (literals === undefined) {
        if (opening !== undefined) await this.batch(opening, [], false);
        return await this.client.query<Raw>({ name, text, values }); // the driver commits
      }
      const results = await this.batch(opening, [inlineStep(name, text, literals)], last);
      return results[results.length - (last ? 2 : 1)]!;
    } catch (e) {
      throw translate(e);
    }
  }

  /**
   * One simple query: the transaction's start when it is not sent yet, `steps` (PREPAREd on this
   * connection first, once), and COMMIT when `commit`; the results of each statement.
   */
  private async batch(
    opening: Opening | undefined,
    steps: InlineStep[],
    commit: boolean,
  ): Promise<pg.QueryResult<Raw>[]> {
    const all = opening === undefined ? steps : [...opening.steps, ...steps];
    let prepared = preparedInline.get(this.client);
    if (prepared === undefined) preparedInline.set(this.client, (prepared = new Set()));
    const sql: string[] = opening === undefined ? [] : [opening.begin];
    for (const step of all) {
      if (!prepared.has(step.name)) {
        // Not transactional: a PREPARE stays when the transaction it ran in rolls back.
        await this.client.query(`PREPARE ${step.name} AS ${step.text}`);
        prepared.add(step.name);
      }
      sql.push(`EXECUTE ${step.name}${step.literals}`);
    }
    if (commit && this.deadline !== undefined) {
      // The statements that commit may run on the server only until a moment before the client
      // gives up (the session's statement_timeout counts from each statement's own start): a
      // write still waiting there (on a row lock) is cancelled rather than committed after its
      // client was told 503. SET LOCAL ends with the transaction; after the PREPAREs, whose
      // round trips the bound must not count.
      const ms = Math.floor(this.deadline.at - performance.now() - COMMIT_MARGIN_MS);
      if (ms < 1) throw deadlinePassed(this.deadline, "no time was left to commit");
      sql.splice(opening === undefined ? 0 : 1, 0, `SET LOCAL statement_timeout = ${ms}`);
    }
    if (commit) {
      sql.push("COMMIT");
      this.inFlight.committing = true;
    }
    this.opening = undefined;
    // node-postgres answers a simple query of several statements with a list of their results
    // (its types say one result), and one of a single statement (BEGIN alone) with its result.
    // When one fails, PostgreSQL runs none after it (COMMIT included): the transaction is left
    // aborted, and the driver rolls it back.
    const answered: pg.QueryResult<Raw> | pg.QueryResult<Raw>[] = await this.client.query<Raw>(
      sql.join("; "),
    );
    if (commit) this.committed = true;
    return Array.isArray(answered) ? answered : [answered];
  }

  /** The key's lock, taken with the transaction's start when that is not sent yet. */
  async lockCreateKey(key: string): Promise<void> {
    const values = [LOCK_CLASS_CREATE_KEY, key];
    const literals = sqlLiterals(values);
    if (this.opening !== undefined && literals !== undefined) {
      this.opening = {
        ...this.opening,
        steps: [...this.opening.steps, inlineStep(CREATE_KEY_LOCK.name, CREATE_KEY_LOCK.text, literals)],
      };
      return;
    }
    await this.send(CREATE_KEY_LOCK.name, CREATE_KEY_LOCK.text, values);
  }
}
