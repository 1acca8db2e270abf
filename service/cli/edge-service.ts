#!/usr/bin/env node
/**
 * The `edge-service` command: the bundled service and its operators' tools on the store.
 * COMMANDS below is the one list of its commands, each with its usage and what runs it; `--help`
 * prints every usage, in its order.
 */
import { existsSync } from "node:fs";
import { constants } from "node:os";
import { join } from "node:path";
import { errorMessage, UsageError } from "../../sdk/contract";
import { apiKeysOf, checkNewKey, createKey, keysRequired, revokeKey } from "../api-keys";
import { parseRetention } from "../audit-retention";
import { batchedSink, LOG_FORMATS, type LogFormat, type ServiceLog, serviceLog } from "../http/log";
import { Secrets, SecretsKey, SecretsKeyError, secretsKeyFrom } from "../secrets";
import type { TlsFiles } from "../http/tls";
import { type ConnectionLimits, DEFAULT_CONNECTION_LIMITS } from "../http/connection-limits";
import {
  type RunningServer,
  type ServerOptions,
  type StopReport,
  DEFAULT_DRAIN_MS,
  DEFAULT_SHUTDOWN_GRACE_MS,
  startServer,
} from "../http/server";
import { DATA_TABLES, describeServer, type LiveServer } from "../store/store";
import { openStore } from "../store/store-open";
import { httpTransport } from "../../sdk/transport";
import { embeddedTransport } from "../embedded";
import { VERSION } from "../../sdk/version";
import { type ParsedCommandLine, parseCommandLine, USAGE_EXIT, usageExit } from "../../sdk/command-line";

/** Copies every row of a SQLite data directory (the audit trail's too) into an empty PostgreSQL database. */
async function migrate(from: string | undefined, to: string | undefined, secrets: Secrets): Promise<number> {
  if (!from || !to) throw new Error("migrate needs --from DIR (a data directory) and --to postgres://...");
  if (!existsSync(join(from, "edge.db"))) {
    throw new Error(`${from} holds no edge.db: pass the data directory the service ran with (--data)`);
  }
  const source = await openStore({ dataDir: from, secrets });
  try {
    const target = await openStore({ dataDir: from, databaseUrl: to, secrets });
    try {
      const dump = await source.dump();
      await target.load(dump);
      const copied = await target.dump();
      const counts = DATA_TABLES.map((t) => `${copied[t].length} ${t}`).join(", ");
      for (const t of DATA_TABLES) {
        if (copied[t].length !== dump[t].length) {
          throw new Error(
            `copied ${copied[t].length} of ${dump[t].length} rows of ${t}: check the target database`,
          );
        }
      }
      console.log(`copied ${counts} from ${source.location} to ${target.location}`);
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
  return 0;
}

/**
 * `secrets rotate`: every secret of the store re-sealed under the new key, in one transaction,
 * and the new key recorded as the one every writer seals under from then on. The old keys are
 * `--from-key-file` (repeatable: a store left with values under two keys is repaired by giving
 * both), else EDGE_SECRETS_KEY; none if nothing was ever sealed. Safe while servers run: they
 * seal under the new key from its commit on. A live server without the new key would answer 503
 * (and be not ready) until restarted with it: refused, naming each, unless `force`.
 */
async function rotate(opts: {
  fromKeyFiles?: readonly string[];
  toKeyFile?: string;
  dataDir: string;
  databaseUrl?: string;
  force?: boolean;
}): Promise<number> {
  if (opts.toKeyFile === undefined) {
    throw new Error(
      "secrets rotate needs --to-key-file NEW (the new key, base64 of 32 bytes: openssl rand -base64 32)",
    );
  }
  const to = SecretsKey.fromFile(opts.toKeyFile, "--to-key-file");
  const fromFiles = opts.fromKeyFiles ?? [];
  const from =
    fromFiles.length === 0
      ? secretsKeyFrom(undefined)
      : fromFiles.map((f) => SecretsKey.fromFile(f, "--from-key-file"));
  if (opts.databaseUrl === undefined && !existsSync(join(opts.dataDir, "edge.db"))) {
    throw new Error(
      `${opts.dataDir} holds no edge.db: pass the data directory the service runs with (--data)`,
    );
  }
  const fromIds = from.map((k) => k.id).join(", ") || "none";
  const refused = (e: unknown) =>
    e instanceof SecretsKeyError
      ? new Error(
          `secrets rotate refused, nothing was changed: the old key (${from.length > 0 ? `${fromIds}, from ${fromFiles.length === 0 ? "EDGE_SECRETS_KEY" : "--from-key-file"}` : "none given"}) does not open the stored secrets: ${e.message}. Pass the key the service runs with as --from-key-file (repeatable: give every key the store's values are sealed under)`,
        )
      : e;
  const store = await openStore({
    dataDir: opts.dataDir,
    databaseUrl: opts.databaseUrl,
    // The new key opens too: values a store left mixed already holds under it are re-sealed as well.
    secrets: new Secrets([...from, to], from[0] ?? to),
  }).catch((e: unknown) => {
    throw refused(e);
  });
  const lacking = (live: readonly LiveServer[]) => live.filter((s) => !s.key_ids.includes(to.id));
  try {
    const done = await store
      .resealSecrets(to, (live) => {
        const without = lacking(live);
        if (without.length > 0 && !opts.force) throw lackingNewKey(without, to, store.location);
      })
      .catch((e: unknown) => {
        throw refused(e);
      });
    console.log(
      `re-sealed ${done.secrets} secrets of ${store.location} under secrets key ${to.id} (was ${fromIds}); ${done.purge}. ${rotatedServers(done.servers, lacking(done.servers), to)}`,
    );
  } finally {
    await store.close();
  }
  return 0;
}

/** `rotate` refused: live servers that lack the new key, each named, and what to do. */
function lackingNewKey(without: readonly LiveServer[], to: SecretsKey, location: string): Error {
  const one = without.length === 1;
  return new Error(
    `secrets rotate refused, nothing was changed: ${without.length} live server${one ? "" : "s"} on ${location} lack${one ? "s" : ""} the new secrets key ${to.id}, and would answer 503 to every request that seals or opens a secret (and /readyz 503) from the rotation on:\n${without.map((s) => `  ${describeServer(s)}\n`).join("")}Restart ${one ? "it" : "each"} with the new key added to its ring (--secrets-key-file NEW beside the old one), then run rotate again; or pass --force to rotate now (${one ? "it stays" : "they stay"} not ready until restarted with it)`,
  );
}

/** What is true of the live servers once `rotate` committed (the store's record of them). */
function rotatedServers(live: readonly LiveServer[], without: readonly LiveServer[], to: SecretsKey): string {
  const sealing = live.filter((s) => !without.includes(s));
  const names = (list: readonly LiveServer[]) => list.map((s) => `${s.host} pid ${s.pid}`).join(", ");
  const parts: string[] = [];
  if (live.length === 0) {
    parts.push(`No live server is recorded on the store: servers started from now on need key ${to.id}.`);
  }
  if (sealing.length > 0) {
    parts.push(
      `${sealing.length} live server${sealing.length === 1 ? " seals" : "s seal"} under key ${to.id} from now on (${names(sealing)}).`,
    );
  }
  if (without.length > 0) {
    parts.push(
      `${without.length} live server${without.length === 1 ? " lacks" : "s lack"} it (--force) and answer${without.length === 1 ? "s" : ""} 503, not ready, until restarted with it: ${names(without)}.`,
    );
  }
  parts.push("Once every server runs with the new key, drop the old key from its --secrets-key-file.");
  return parts.join(" ");
}

type KeysCommand =
  | { command: "create"; name: string; scope: string }
  | { command: "revoke"; name: string }
  | { command: "list" };

/** The `keys` command line, or a usage error. */
function keysCommand(args: string[], scope: string | undefined): KeysCommand {
  const [command, name, ...rest] = args;
  const usage = "keys takes: create NAME --scope read|write|admin, list [--json], or revoke NAME";
  if (command === "list" && name === undefined) return { command };
  if ((command === "create" || command === "revoke") && name && rest.length === 0) {
    if (command === "revoke") return { command, name };
    if (scope === undefined) throw new UsageError("keys create needs --scope read, write or admin");
    return { command, name, scope };
  }
  throw new UsageError(usage);
}

/**
 * The secrets of a store opened by `keys`: none are read or written (API keys are hashed, not
 * sealed), so the store's secrets key is neither asked for nor checked; a secret reached anyway
 * is a bug, refused rather than passed on unopened.
 */
class KeysOnlySecrets extends Secrets {
  override checkStoredKeys(): undefined {
    return undefined;
  }
  /** A write of the keys seals nothing: whatever key the store seals under, this is the ring. */
  override sealingUnder(): Secrets {
    return this;
  }
  /** Keys make no creates: the create fingerprint key is neither read nor made (the next server makes it). */
  override metaKey(): undefined {
    return undefined;
  }
  override open(_stored: string, where: string): string {
    throw new Error(`edge-service keys reads no secrets, yet reached ${where}: please report this`);
  }
  override seal(): string {
    throw new Error("edge-service keys writes no secrets, yet was about to seal one: please report this");
  }
}

/** `keys create|list|revoke`: named API keys, on the store the service runs on (no secrets key needed). */
async function keys(
  args: string[],
  opts: { scope?: string; json?: boolean; dataDir: string; databaseUrl?: string },
): Promise<number> {
  const cmd = keysCommand(args, opts.scope);
  // A bad name or scope is refused before the store is opened: a new data directory is not made.
  if (cmd.command === "create") checkNewKey(cmd.name, cmd.scope);
  if (
    cmd.command !== "create" &&
    opts.databaseUrl === undefined &&
    !existsSync(join(opts.dataDir, "edge.db"))
  ) {
    throw new UsageError(
      `${opts.dataDir} holds no edge.db: pass the data directory the service runs with (--data)`,
    );
  }
  const store = await openStore({
    dataDir: opts.dataDir,
    databaseUrl: opts.databaseUrl,
    secrets: new KeysOnlySecrets(),
  });
  try {
    if (cmd.command === "create") {
      const first = (await apiKeysOf(store)).length === 0;
      const key = await createKey(store, cmd.name, cmd.scope);
      if (first) console.error(firstKeyNotice(cmd.name, store.location));
      console.error(
        `made key "${cmd.name}" (scope ${cmd.scope}) on ${store.location}; it is shown once, below, and only its hash is stored:`,
      );
      console.log(key);
    } else if (cmd.command === "revoke") {
      await revokeKey(store, cmd.name);
      console.error(
        `revoked key "${cmd.name}" on ${store.location}: every replica refuses it within a second`,
      );
    } else {
      const rows = (await apiKeysOf(store)).map((r) => ({
        name: r.name,
        scope: r.scope,
        created_at: r.created_at,
        revoked_at: r.revoked_at,
      }));
      if (opts.json) console.log(JSON.stringify(rows, null, 2));
      else {
        const header = ["NAME", "SCOPE", "CREATED", "REVOKED"];
        const cells = rows.map((r) => [r.name, r.scope, r.created_at, r.revoked_at ?? "-"]);
        const widths = header.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i]?.length ?? 0)));
        for (const row of [header, ...cells]) {
          console.log(
            row
              .map((cell, i) => cell.padEnd(widths[i] ?? 0))
              .join("  ")
              .trimEnd(),
          );
        }
      }
    }
  } finally {
    await store.close();
  }
  return 0;
}

/**
 * What `keys create` says when it makes a store's first key: from then on every request needs a
 * key (keysRequired), so a stack that deployed without one is refused on its next run. Said where
 * the operator looks, with what each stack needs.
 */
function firstKeyNotice(name: string, location: string): string {
  return [
    `"${name}" is the first key of ${location}: authentication is now on. Within a second every`,
    "server on this store, one started without --api-key too, refuses a request without a valid key",
    "(401 ERR_EDGE_401: missing API key); only GET /healthz and /readyz stay open. Every stack and",
    "client of the service needs a key now: make each its own (edge-service keys create NAME --scope",
    "write) and give it to the stack (pulumi config set --secret edge:apiKey <key>) or in EDGE_API_KEY.",
  ].join("\n");
}

/** One API call against a data directory (in-process) or a running service. */
async function request(
  method: string,
  path: string,
  opts: { body?: string; data: string; url?: string; apiKey?: string; secretsKeyFile?: readonly string[] },
) {
  if (!path.startsWith("/")) throw new Error(`PATH must start with "/", got ${path}`);
  const transport = opts.url
    ? httpTransport({
        baseUrl: opts.url,
        apiKey: opts.apiKey,
        retries: 2,
        // The environment of pulumi-edge's settings: a private CA, a client certificate.
        tls: {
          caCertificate: process.env.EDGE_CA_CERTIFICATE || undefined,
          clientCertificate: process.env.EDGE_CLIENT_CERTIFICATE || undefined,
          clientKey: process.env.EDGE_CLIENT_KEY || undefined,
        },
        settingNames: {
          baseUrl: "--url",
          caCertificate: "EDGE_CA_CERTIFICATE",
          clientCertificate: "EDGE_CLIENT_CERTIFICATE",
          clientKey: "EDGE_CLIENT_KEY",
        },
      })
    : embeddedTransport({ dataDir: opts.data, secretsKeyFile: opts.secretsKeyFile });
  const response = await transport.send(
    new Request(transport.baseUrl + path, {
      method: method.toUpperCase(),
      headers: opts.body === undefined ? {} : { "content-type": "application/json" },
      body: opts.body,
    }),
  );
  const text = await response.text();
  if (text) console.log(text.startsWith("{") ? JSON.stringify(JSON.parse(text), null, 2) : text);
  return response.ok ? 0 : 1;
}

/** Every option of every command: one parse, so a mistyped option is refused whatever the command. */
const OPTIONS = {
  port: { type: "string", default: "8080" },
  host: { type: "string", default: "127.0.0.1" },
  data: { type: "string", default: "./.edge-service" },
  "api-key": { type: "string" },
  "rate-limit": { type: "string" },
  body: { type: "string" },
  url: { type: "string" },
  database: { type: "string" },
  "pool-size": { type: "string" },
  "log-format": { type: "string", default: "text" },
  "shutdown-grace": { type: "string" },
  drain: { type: "string" },
  "database-deadline": { type: "string" },
  "handshake-timeout": { type: "string" },
  "headers-timeout": { type: "string" },
  "request-timeout": { type: "string" },
  "max-connections": { type: "string" },
  "max-handshakes": { type: "string" },
  "audit-retention": { type: "string", default: "90d" },
  "tls-cert": { type: "string" },
  "tls-key": { type: "string" },
  "tls-client-ca": { type: "string" },
  from: { type: "string" },
  to: { type: "string" },
  "secrets-key-file": { type: "string", multiple: true },
  "from-key-file": { type: "string", multiple: true },
  "to-key-file": { type: "string" },
  scope: { type: "string" },
  json: { type: "boolean" },
  force: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
} as const;

type Values = ParsedCommandLine<{
  args: string[];
  allowPositionals: true;
  options: typeof OPTIONS;
}>["values"];

/** A command: its positionals after its name (`keys create NAME` → `create NAME`) and every value. */
type Command = (args: string[], values: Values) => Promise<number>;

const databaseUrlOf = (values: Values) => values.database ?? (process.env.EDGE_DATABASE_URL || undefined);
const apiKeyOf = (values: Values) => values["api-key"] ?? (process.env.EDGE_API_KEY || undefined);

/** `serve`'s TLS files (each option, else its environment variable), or none: plain HTTP. */
function tlsFilesOf(values: Values): TlsFiles | undefined {
  const certFile = values["tls-cert"] ?? (process.env.EDGE_TLS_CERT || undefined);
  const keyFile = values["tls-key"] ?? (process.env.EDGE_TLS_KEY || undefined);
  const clientCaFile = values["tls-client-ca"] ?? (process.env.EDGE_TLS_CLIENT_CA || undefined);
  if (certFile === undefined && keyFile === undefined) {
    if (clientCaFile !== undefined) {
      throw new UsageError(
        "--tls-client-ca (EDGE_TLS_CLIENT_CA) asks clients for certificates over TLS: give the server's own with --tls-cert and --tls-key too",
      );
    }
    return undefined;
  }
  if (certFile === undefined || keyFile === undefined) {
    throw new UsageError(
      certFile === undefined
        ? "--tls-key (EDGE_TLS_KEY) needs the certificate it is the key of: give --tls-cert FILE (or EDGE_TLS_CERT) too"
        : "--tls-cert (EDGE_TLS_CERT) needs the certificate's private key: give --tls-key FILE (or EDGE_TLS_KEY) too",
    );
  }
  return { certFile, keyFile, clientCaFile };
}

/**
 * The commands by name: each one's usage (its lines of `--help`, the first without its "usage: ")
 * and what runs it, refusing positionals it does not take (the usage is printed). The one list of
 * the commands: the usage, the dispatch and the docs' mentions follow from it.
 */
const COMMANDS: Record<string, { usage: string; run: Command }> = {
  serve: {
    usage: `edge-service serve [--port 8080] [--host 127.0.0.1]
                          [--data ./.edge-service | --database postgres://... | env EDGE_DATABASE_URL]
                          [--api-key KEY | env EDGE_API_KEY] [--rate-limit N/min]
                          [--pool-size 10] [--secrets-key-file PATH ... | env EDGE_SECRETS_KEY]
                          [--log-format text|json] [--drain 5s] [--shutdown-grace 10s]
                          [--audit-retention 90d] [--database-deadline 5s]
                          [--handshake-timeout 10s] [--headers-timeout 10s] [--request-timeout 30s]
                          [--max-connections 1000] [--max-handshakes 256]
                          [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]
                           | env EDGE_TLS_CERT, EDGE_TLS_KEY, EDGE_TLS_CLIENT_CA]
         (--database: the PostgreSQL store; run several replicas on one database behind a load
          balancer; --pool-size: connections of this replica's pool; the secrets key, base64 of
          32 bytes, seals secrets at rest: without one they are stored unsealed; repeat
          --secrets-key-file (or comma-separate EDGE_SECRETS_KEY) for a key ring: each key opens
          what it sealed, new values are sealed under the store's current key; --log-format
          json: one JSON object per request on stderr, for log pipelines; --audit-retention: how
          long GET /audit_events keeps each change, 30s..999999d, pruned in the background;
          --database-deadline: how long a database call may take (PostgreSQL), then its request
          is answered 503 with Retry-After and nothing it began commits; --handshake-timeout,
          --headers-timeout (from the connection's start for its first request),
          --request-timeout (from a request's first byte to its answer's last): a connection
          that takes longer is closed; --max-connections: open at once, more are closed at
          once; --max-handshakes: TLS handshakes under way, one more closes the oldest. GET
          /healthz and /readyz answer without a key; GET /metrics, Prometheus' format, with the key.
          SIGTERM/SIGINT: stop accepting, answer with "Connection: close", keep idle keep-alive
          connections open for --drain (5s: a load balancer may be sending on one; 0 closes
          them at once), let in-flight requests finish until --shutdown-grace after the signal
          (10s, 1.5s, 500ms; the drain runs inside it), then cut the connections still open,
          close the store and exit 0; a second signal cuts them at once. --tls-cert, --tls-key:
          serve HTTPS (TLS 1.2 or later) with this certificate (PEM, its chain after it) and its
          unencrypted key; both are loaded again when a file changes, and on SIGHUP, with no
          restart: new connections get the new certificate, open ones keep theirs; files that
          cannot be served leave the old one serving, said in the log and in /readyz's detail.
          --tls-client-ca: mutual TLS, every request but the probes needs a client certificate
          one of these CAs signed. Without TLS on an address other than loopback, the log warns
          that keys cross the network in clear)`,
    run: async (args, values) => (args.length > 0 ? usage() : serve(values)),
  },
  request: {
    usage: `edge-service request METHOD PATH [--body JSON]
                          [--data ./.edge-service | --url URL [--api-key KEY | env EDGE_API_KEY]]
         (one API call, e.g. "request GET /edges/https"; prints the JSON answer, exits 1 on an error status;
          an https:// URL trusts the system's CAs and EDGE_CA_CERTIFICATE, and presents
          EDGE_CLIENT_CERTIFICATE with EDGE_CLIENT_KEY: PEM text or a file's path each)`,
    run: async (args, values) => {
      const [method, path] = args;
      if (method === undefined || path === undefined || args.length > 2) return usage();
      return request(method, path, {
        body: values.body,
        data: values.data,
        url: values.url,
        apiKey: apiKeyOf(values),
        secretsKeyFile: values["secrets-key-file"],
      });
    },
  },
  migrate: {
    usage: `edge-service migrate --from DIR --to postgres://...
         (copies a SQLite data directory, its audit trail included, into an empty PostgreSQL
          database, in one transaction; sealed secrets are copied as they are: give the key with
          EDGE_SECRETS_KEY or --secrets-key-file)`,
    run: async (args, values) =>
      args.length > 0
        ? usage()
        : migrate(values.from, values.to, new Secrets(secretsKeyFrom(values["secrets-key-file"]))),
  },
  secrets: {
    usage: `edge-service secrets rotate --to-key-file NEW [--from-key-file OLD ... | env EDGE_SECRETS_KEY]
                          [--data ./.edge-service | --database postgres://... | env EDGE_DATABASE_URL]
                          [--force]
         (re-seals every secret, sealed or not yet, under the key of NEW in one transaction, makes
          NEW the key every server seals under, then erases the old values' bytes (SQLite: VACUUM;
          PostgreSQL: VACUUM of the tables); refuses, changing nothing, when the old keys do not
          open one, or while a live server lacks NEW (it would answer 503 and be not ready until
          restarted with it), naming each; --force rotates anyway. Give every server NEW as an
          extra --secrets-key-file first, then rotate, then drop OLD; a store left with values
          under two keys is repaired by giving both as --from-key-file)`,
    run: async (args, values) =>
      args.length !== 1 || args[0] !== "rotate"
        ? usage()
        : rotate({
            fromKeyFiles: values["from-key-file"],
            toKeyFile: values["to-key-file"],
            dataDir: values.data,
            databaseUrl: databaseUrlOf(values),
            force: values.force,
          }),
  },
  keys: {
    usage: `edge-service keys create NAME --scope read|write|admin
       edge-service keys list [--json]
       edge-service keys revoke NAME
                          [--data ./.edge-service | --database postgres://... | env EDGE_DATABASE_URL]
         (named API keys, on the store itself: in force on every replica within a second, no
          restart; no secrets key needed. The first key turns authentication on: from then on
          every request needs a valid key, a stack's too. read: the GETs (drift checks, metrics); write: every operation; admin: the
          same, and these commands. create prints the key once, on stdout; only its SHA-256 is
          stored. A revoked key's name is never reused. --api-key stays the admin "bootstrap" key)`,
    run: (args, values) =>
      keys(args, {
        scope: values.scope,
        json: values.json,
        dataDir: values.data,
        databaseUrl: databaseUrlOf(values),
      }),
  },
};

/** The whole usage: every command's, in COMMANDS' order. */
const USAGE = [...Object.values(COMMANDS).map((c) => c.usage), "edge-service --help | --version"]
  .map((u, i) => (i === 0 ? `usage: ${u}` : `       ${u}`))
  .join("\n");

/** No such command, or positionals it does not take: the whole usage, where a script's log shows it. */
function usage(): number {
  console.error(USAGE);
  return USAGE_EXIT;
}

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseCommandLine({ args: argv, allowPositionals: true, options: OPTIONS });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (values.version) {
    console.log(VERSION);
    return 0;
  }
  const [name, ...args] = positionals;
  const command = name === undefined ? undefined : COMMANDS[name];
  return command ? command.run(args, values) : usage();
}

/** `serve`'s options, each checked, with what to give instead. */
function serverOptions(
  values: Values,
): Omit<ServerOptions, "log"> & { drainMs: number; shutdownGraceMs: number; logFormat: LogFormat } {
  const port = integerFlag("port", values.port, 0, 65535);
  let rateLimitPerMinute: number | undefined;
  if (values["rate-limit"] !== undefined) {
    const m = /^(\d+)(?:\/min)?$/.exec(values["rate-limit"]);
    if (!m || Number(m[1]) < 1)
      throw new Error(`--rate-limit must look like 600/min, got ${values["rate-limit"]}`);
    rateLimitPerMinute = Number(m[1]);
  }
  const databaseUrl = databaseUrlOf(values);
  let poolSize: number | undefined;
  if (values["pool-size"] !== undefined) {
    poolSize = integerFlag("pool-size", values["pool-size"], 1, 1000);
    if (databaseUrl === undefined) throw new Error("--pool-size applies to --database (PostgreSQL) only");
  }
  let databaseDeadlineMs: number | undefined;
  if (values["database-deadline"] !== undefined) {
    databaseDeadlineMs = durationMs("--database-deadline", values["database-deadline"]);
    if (databaseDeadlineMs < 1000 || databaseDeadlineMs > 600_000)
      throw new Error(`--database-deadline must be from 1s to 600s, got ${values["database-deadline"]}`);
    if (databaseUrl === undefined)
      throw new Error("--database-deadline applies to --database (PostgreSQL) only");
  }
  const auditRetentionMs = parseRetention(values["audit-retention"]);
  if (auditRetentionMs === undefined) {
    throw new Error(
      `--audit-retention must be a number and a unit (s, m, h or d), e.g. 90d, got ${values["audit-retention"]}`,
    );
  }
  const logFormat: LogFormat | undefined = LOG_FORMATS.find((f) => f === values["log-format"]);
  if (logFormat === undefined) {
    throw new Error(`--log-format must be ${LOG_FORMATS.join(" or ")}, got ${values["log-format"]}`);
  }
  return {
    secretsKey: secretsKeyFrom(values["secrets-key-file"]),
    dataDir: values.data,
    databaseUrl,
    poolSize,
    host: values.host,
    port,
    apiKey: apiKeyOf(values),
    rateLimitPerMinute,
    logFormat,
    drainMs: values.drain === undefined ? DEFAULT_DRAIN_MS : durationMs("--drain", values.drain),
    shutdownGraceMs:
      values["shutdown-grace"] === undefined
        ? DEFAULT_SHUTDOWN_GRACE_MS
        : durationMs("--shutdown-grace", values["shutdown-grace"]),
    auditRetentionMs,
    databaseDeadlineMs,
    limits: connectionLimitsOf(values),
    tls: tlsFilesOf(values),
  };
}

/** `serve`'s connection limits given on the command line (the others keep their defaults). */
function connectionLimitsOf(values: Values): Partial<ConnectionLimits> {
  const limits: Partial<ConnectionLimits> = {};
  const timeouts = [
    ["handshake-timeout", "handshakeTimeoutMs"],
    ["headers-timeout", "headersTimeoutMs"],
    ["request-timeout", "requestTimeoutMs"],
  ] as const;
  for (const [flag, key] of timeouts) {
    const text = values[flag];
    if (text === undefined) continue;
    const ms = durationMs(`--${flag}`, text);
    if (ms < 100) throw new Error(`--${flag} must be 100ms or more, got ${text}`);
    limits[key] = ms;
  }
  const headers = limits.headersTimeoutMs ?? DEFAULT_CONNECTION_LIMITS.headersTimeoutMs;
  const request = limits.requestTimeoutMs ?? DEFAULT_CONNECTION_LIMITS.requestTimeoutMs;
  if (headers > request) {
    throw new Error(
      `--headers-timeout (${seconds(headers)}) must not be longer than --request-timeout (${seconds(request)}): a request's headers are part of it`,
    );
  }
  const counts = [
    ["max-connections", "maxConnections"],
    ["max-handshakes", "maxPendingHandshakes"],
  ] as const;
  for (const [flag, key] of counts) {
    const text = values[flag];
    if (text !== undefined) limits[key] = integerFlag(flag, text, 1, 1_000_000);
  }
  return limits;
}

/** A flag's whole number from `min` to `max`, in digits only (`1e1`, `4.0`, ` 4` are refused). */
function integerFlag(flag: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < min || n > max)
    throw new Error(`--${flag} must be an integer from ${min} to ${max}, got ${text}`);
  return n;
}

/** `serve`: the server until a signal stops it, then what the stop did. */
async function serve(values: Values): Promise<number> {
  const options = serverOptions(values);
  // The log is best-effort: a reader of stdout or stderr that went away (EPIPE) must not end the
  // service (an 'error' event with no listener throws).
  for (const stream of [process.stdout, process.stderr]) stream.on("error", () => undefined);
  // Written a turn of the event loop at a time (see batchedSink), everything queued on exit.
  const lines = batchedSink((text) => process.stderr.write(text));
  process.on("exit", lines.flush);
  // Text lines get the time in front; a JSON line carries its own.
  const sink =
    options.logFormat === "json"
      ? lines.sink
      : (line: string) => lines.sink(`${new Date().toISOString()} ${line}`);
  try {
    const server = await startServer({ ...options, log: sink });
    console.log(
      `edge-service listening on ${server.url} (${server.store.kind === "sqlite" ? "data" : "database"}: ${server.store.location}, auth: ${await authSummary(server, options.apiKey !== undefined)})`,
    );
    const log = serviceLog(sink, options.logFormat);
    if (options.drainMs > 0 && options.drainMs >= options.shutdownGraceMs) {
      log.event(
        "warn",
        `--drain ${seconds(options.drainMs)} is not shorter than --shutdown-grace ${seconds(options.shutdownGraceMs)}: a stop ends at the grace, which cuts the drain short; give a drain above the time your load balancer takes to mark this replica down, and a grace above the drain`,
      );
    }
    const { reloadTls } = server;
    // Without TLS, SIGHUP keeps its default (the process ends): there is nothing to reload.
    if (reloadTls) process.on("SIGHUP", () => reloadTls("SIGHUP"));
    const report = await stopOnSignals(server, options, log);
    const why = {
      finished: "every request finished in time",
      grace: `the ${seconds(options.shutdownGraceMs)} grace ran out`,
      now: "a second signal",
    }[report.ending];
    const abandoned =
      report.abandoned > 0 ? `, ${report.abandoned} requests still running were abandoned` : "";
    const cut = `${report.cut} connection${report.cut === 1 ? "" : "s"} cut`;
    log.event("info", `stopped: ${cut} (${why})${abandoned}; the store is closed`, {
      cut: String(report.cut),
      ending: report.ending,
    });
    return 0;
  } finally {
    lines.flush(); // before a fatal error's message, which main writes at once
  }
}

/** `--shutdown-grace`, `--drain`: seconds, or a number with `s` or `ms`; 0: none. */
function durationMs(flag: string, text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s)?$/.exec(text);
  const ms = m ? Number(m[1]) * (m[2] === "ms" ? 1 : 1000) : NaN;
  if (!(ms >= 0 && ms <= 3_600_000)) {
    throw new Error(`${flag} must be a duration from 0 to 3600s (10s, 1.5s, 500ms), got ${text}`);
  }
  return Math.round(ms);
}

const seconds = (ms: number): string => `${ms / 1000} s`;

/** What the banner says of auth: what the server really requires (see keysRequired). */
async function authSummary(server: RunningServer, bootstrap: boolean): Promise<string> {
  const rows = await apiKeysOf(server.store);
  if (!keysRequired(rows, bootstrap)) return "none, loopback only";
  const inForce = rows.filter((k) => k.revoked_at === null).length;
  if (!bootstrap && inForce === 0) {
    return `named keys (0 in force, ${rows.length} revoked: every request is refused; make one with edge-service keys create NAME --scope admin)`;
  }
  const named = inForce > 0 ? `${inForce} named keys` : rows.length > 0 ? "named keys: 0 in force" : "";
  return [bootstrap ? "bootstrap key" : "", named].filter(Boolean).join(" + ");
}

/**
 * Resolves when a SIGTERM or SIGINT has stopped the server (see RunningServer.close). A second
 * signal cuts the connections at once, still closing the store; a third exits without closing it
 * (a store that cannot close, a database gone).
 */
function stopOnSignals(
  server: RunningServer,
  { drainMs, shutdownGraceMs }: { drainMs: number; shutdownGraceMs: number },
  log: ServiceLog,
): Promise<StopReport> {
  return new Promise<StopReport>((resolve, reject) => {
    let signals = 0;
    const onSignal = (signal: NodeJS.Signals) => {
      signals++;
      if (signals === 1) {
        log.event(
          "info",
          `${signal} received: stopping; idle keep-alive connections stay open for up to ${seconds(Math.min(drainMs, shutdownGraceMs))} (the drain), in-flight requests have until ${seconds(shutdownGraceMs)} after this signal to finish (the grace), then their connections are cut (a second SIGTERM or SIGINT cuts them now)`,
        );
        server.close().then(resolve, reject);
      } else if (signals === 2) {
        log.event("warn", `${signal} received again: cutting every connection now, then closing the store`);
        void server.close({ now: true });
      } else {
        log.event("error", `${signal} received a third time: exiting without closing the store`);
        process.exit(128 + constants.signals[signal]);
      }
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  });
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError) process.exit(usageExit("edge-service", error));
    console.error(`edge-service: ${errorMessage(error)}`);
    process.exit(1);
  },
);
