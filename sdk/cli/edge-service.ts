#!/usr/bin/env node
/**
 * edge-service serve [--port 8080] [--host 127.0.0.1]
 *                    [--data ./.edge-service | --database postgres://... | env EDGE_DATABASE_URL]
 *                    [--api-key KEY | env EDGE_API_KEY] [--rate-limit N/min]
 *                    [--secrets-key-file PATH | env EDGE_SECRETS_KEY]
 *                    [--log-format text|json] [--audit-retention 90d]
 * edge-service request METHOD PATH [--body JSON] [--data DIR | --url URL [--api-key KEY]]
 * edge-service migrate --from DIR --to postgres://...
 * edge-service secrets rotate --to-key-file NEW [--from-key-file OLD | env EDGE_SECRETS_KEY]
 *                             [--data DIR | --database postgres://...]
 * edge-service keys create NAME --scope read|write|admin | keys list [--json] | keys revoke NAME
 *                             [--data DIR | --database postgres://...]
 * edge-service --help | --version
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createKey, KeyUsageError, revokeKey } from "../service/api-keys";
import { parseRetention } from "../service/audit";
import { LOG_FORMATS, type LogFormat, serviceLog } from "../service/log";
import { Secrets, SecretsKey, SecretsKeyError, secretsKeyFrom } from "../service/secrets";
import { startServer } from "../service/server";
import { DATA_TABLES } from "../service/store";
import { openStore } from "../service/store-open";
import { embeddedTransport, httpTransport } from "../transport";
import { VERSION } from "../version";

const USAGE = `usage: edge-service serve [--port 8080] [--host 127.0.0.1]
                          [--data ./.edge-service | --database postgres://... | env EDGE_DATABASE_URL]
                          [--api-key KEY | env EDGE_API_KEY] [--rate-limit N/min]
                          [--pool-size 10] [--secrets-key-file PATH | env EDGE_SECRETS_KEY]
                          [--log-format text|json] [--audit-retention 90d]
         (--database: the PostgreSQL store; run several replicas on one database behind a load
          balancer; --pool-size: connections of this replica's pool; the secrets key, base64 of
          32 bytes, seals secrets at rest: without one they are stored unsealed; --log-format
          json: one JSON object per request on stderr, for log pipelines; --audit-retention: how
          long GET /audit_events keeps each change, 30s..999999d, pruned in the background. GET
          /healthz and /readyz answer without a key; GET /metrics, Prometheus' format, with the key)
       edge-service request METHOD PATH [--body JSON]
                          [--data ./.edge-service | --url URL [--api-key KEY | env EDGE_API_KEY]]
         (one API call, e.g. "request GET /edges/https"; prints the JSON answer, exits 1 on an error status)
       edge-service migrate --from DIR --to postgres://...
         (copies a SQLite data directory into an empty PostgreSQL database, in one transaction;
          sealed secrets are copied as they are: give the key with EDGE_SECRETS_KEY or
          --secrets-key-file)
       edge-service secrets rotate --to-key-file NEW [--from-key-file OLD | env EDGE_SECRETS_KEY]
                          [--data ./.edge-service | --database postgres://... | env EDGE_DATABASE_URL]
         (re-seals every secret, sealed or not yet, under the key of NEW in one transaction;
          refuses, changing nothing, when the old key does not open one. Stop the service first,
          then start it with the new key)
       edge-service keys create NAME --scope read|write|admin
       edge-service keys list [--json]
       edge-service keys revoke NAME
                          [--data ./.edge-service | --database postgres://... | env EDGE_DATABASE_URL]
                          [--secrets-key-file PATH | env EDGE_SECRETS_KEY]
         (named API keys, on the store itself: in force on every replica within a second, no
          restart. read: the GETs (drift checks, metrics); write: every operation; admin: the
          same, and these commands. create prints the key once, on stdout; only its SHA-256 is
          stored. A revoked key's name is never reused. --api-key stays the admin "bootstrap" key)
       edge-service --help | --version`;

/** Copies every row of a SQLite data directory into an empty PostgreSQL database. */
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
 * `secrets rotate`: every secret of the store re-sealed under the new key, in one transaction.
 * The old key is the one the service ran with (`--from-key-file`, else EDGE_SECRETS_KEY; none if
 * nothing was ever sealed).
 */
async function rotate(opts: {
  fromKeyFile?: string;
  toKeyFile?: string;
  dataDir: string;
  databaseUrl?: string;
}): Promise<number> {
  if (opts.toKeyFile === undefined) {
    throw new Error(
      "secrets rotate needs --to-key-file NEW (the new key, base64 of 32 bytes: openssl rand -base64 32)",
    );
  }
  const to = SecretsKey.fromFile(opts.toKeyFile, "--to-key-file");
  const from =
    opts.fromKeyFile === undefined
      ? secretsKeyFrom(undefined)
      : SecretsKey.fromFile(opts.fromKeyFile, "--from-key-file");
  if (opts.databaseUrl === undefined && !existsSync(join(opts.dataDir, "edge.db"))) {
    throw new Error(
      `${opts.dataDir} holds no edge.db: pass the data directory the service runs with (--data)`,
    );
  }
  const refused = (e: unknown) =>
    e instanceof SecretsKeyError
      ? new Error(
          `secrets rotate refused, nothing was changed: the old key (${from ? `${from.id}, from ${opts.fromKeyFile === undefined ? "EDGE_SECRETS_KEY" : "--from-key-file"}` : "none given"}) does not open the stored secrets: ${e.message}. Pass the key the service runs with as --from-key-file`,
        )
      : e;
  const store = await openStore({
    dataDir: opts.dataDir,
    databaseUrl: opts.databaseUrl,
    secrets: new Secrets(from),
  }).catch((e: unknown) => {
    throw refused(e);
  });
  try {
    const count = await store.resealSecrets(new Secrets(to)).catch((e: unknown) => {
      throw refused(e);
    });
    console.log(
      `re-sealed ${count} secrets of ${store.location} under secrets key ${to.id} (was ${from?.id ?? "none"}): start the service with the new key`,
    );
  } finally {
    await store.close();
  }
  return 0;
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
    if (scope === undefined) throw new KeyUsageError("keys create needs --scope read, write or admin");
    return { command, name, scope };
  }
  throw new KeyUsageError(usage);
}

/** `keys create|list|revoke`: named API keys, on the store the service runs on. */
async function keys(
  args: string[],
  opts: { scope?: string; json?: boolean; dataDir: string; databaseUrl?: string; secretsKeyFile?: string },
): Promise<number> {
  const cmd = keysCommand(args, opts.scope);
  if (
    cmd.command !== "create" &&
    opts.databaseUrl === undefined &&
    !existsSync(join(opts.dataDir, "edge.db"))
  ) {
    throw new KeyUsageError(
      `${opts.dataDir} holds no edge.db: pass the data directory the service runs with (--data)`,
    );
  }
  const store = await openStore({
    dataDir: opts.dataDir,
    databaseUrl: opts.databaseUrl,
    secrets: new Secrets(secretsKeyFrom(opts.secretsKeyFile)),
  });
  try {
    if (cmd.command === "create") {
      const key = await createKey(store, cmd.name, cmd.scope);
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
      const rows = (await store.apiKeys()).map((r) => ({
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

/** One API call against a data directory (in-process) or a running service. */
async function request(
  method: string,
  path: string,
  opts: { body?: string; data: string; url?: string; apiKey?: string; secretsKeyFile?: string },
) {
  if (!path.startsWith("/")) throw new Error(`PATH must start with "/", got ${path}`);
  const transport = opts.url
    ? httpTransport({ baseUrl: opts.url, apiKey: opts.apiKey, retries: 2 })
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

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
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
      "audit-retention": { type: "string", default: "90d" },
      from: { type: "string" },
      to: { type: "string" },
      "secrets-key-file": { type: "string" },
      "from-key-file": { type: "string" },
      "to-key-file": { type: "string" },
      scope: { type: "string" },
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" },
      version: { type: "boolean" },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (values.version) {
    console.log(VERSION);
    return 0;
  }
  if (positionals[0] === "request" && positionals.length === 3) {
    const apiKey = values["api-key"] ?? (process.env.EDGE_API_KEY || undefined);
    return request(positionals[1]!, positionals[2]!, {
      body: values.body,
      data: values.data,
      url: values.url,
      apiKey,
      secretsKeyFile: values["secrets-key-file"],
    });
  }
  if (positionals[0] === "migrate" && positionals.length === 1) {
    return migrate(values.from, values.to, new Secrets(secretsKeyFrom(values["secrets-key-file"])));
  }
  if (positionals[0] === "secrets" && positionals[1] === "rotate" && positionals.length === 2) {
    return rotate({
      fromKeyFile: values["from-key-file"],
      toKeyFile: values["to-key-file"],
      dataDir: values.data,
      databaseUrl: values.database ?? (process.env.EDGE_DATABASE_URL || undefined),
    });
  }
  if (positionals[0] === "keys") {
    return keys(positionals.slice(1), {
      scope: values.scope,
      json: values.json,
      dataDir: values.data,
      databaseUrl: values.database ?? (process.env.EDGE_DATABASE_URL || undefined),
      secretsKeyFile: values["secrets-key-file"],
    });
  }
  if (values.help || positionals[0] !== "serve" || positionals.length > 1) {
    console.error(USAGE);
    return 2;
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`--port must be 0..65535, got ${values.port}`);
  let rateLimitPerMinute: number | undefined;
  if (values["rate-limit"] !== undefined) {
    const m = /^(\d+)(?:\/min)?$/.exec(values["rate-limit"]);
    if (!m || Number(m[1]) < 1)
      throw new Error(`--rate-limit must look like 600/min, got ${values["rate-limit"]}`);
    rateLimitPerMinute = Number(m[1]);
  }
  const apiKey = values["api-key"] ?? (process.env.EDGE_API_KEY || undefined);
  const databaseUrl = values.database ?? (process.env.EDGE_DATABASE_URL || undefined);
  let poolSize: number | undefined;
  if (values["pool-size"] !== undefined) {
    poolSize = Number(values["pool-size"]);
    if (!Number.isInteger(poolSize) || poolSize < 1 || poolSize > 1000)
      throw new Error(`--pool-size must be an integer from 1 to 1000, got ${values["pool-size"]}`);
    if (databaseUrl === undefined) throw new Error("--pool-size applies to --database (PostgreSQL) only");
  }
  const auditRetentionMs = parseRetention(values["audit-retention"]);
  if (auditRetentionMs === undefined) {
    throw new Error(
      `--audit-retention must be a number and a unit (s, m, h or d), e.g. 90d, got ${values["audit-retention"]}`,
    );
  }
  const secretsKey = secretsKeyFrom(values["secrets-key-file"]);
  const logFormat: LogFormat | undefined = LOG_FORMATS.find((f) => f === values["log-format"]);
  if (logFormat === undefined) {
    throw new Error(`--log-format must be ${LOG_FORMATS.join(" or ")}, got ${values["log-format"]}`);
  }
  // Text lines get the time in front; a JSON line carries its own.
  const sink =
    logFormat === "json"
      ? (line: string) => process.stderr.write(`${line}\n`)
      : (line: string) => console.error(`${new Date().toISOString()} ${line}`);
  const server = await startServer({
    secretsKey,
    dataDir: values.data,
    databaseUrl,
    poolSize,
    host: values.host,
    port,
    apiKey,
    rateLimitPerMinute,
    log: sink,
    logFormat,
    auditRetentionMs,
  });
  const namedKeys = (await server.store.apiKeys()).filter((k) => k.revoked_at === null).length;
  const auth = [apiKey ? "bootstrap key" : "", namedKeys > 0 ? `${namedKeys} named keys` : ""].filter(
    Boolean,
  );
  console.log(
    `edge-service listening on ${server.url} (${server.store.kind === "sqlite" ? "data" : "database"}: ${server.store.location}, auth: ${auth.length > 0 ? auth.join(" + ") : "none, loopback only"})`,
  );

  await new Promise<void>((resolve) => {
    const log = serviceLog(sink, logFormat);
    const stop = (signal: string) => {
      log.event("info", `${signal} received: finishing in-flight requests`);
      void server.close().then(resolve);
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: Error & { code?: string }) => {
    // A mistyped command line (parseArgs: unknown option, missing value) is a usage error.
    const usage =
      error.code?.startsWith("ERR_PARSE_ARGS_") || error instanceof KeyUsageError
        ? "; run edge-service --help"
        : "";
    console.error(`edge-service: ${error.message}${usage}`);
    process.exit(usage ? 2 : 1);
  },
);
