#!/usr/bin/env node
/**
 * edge-service serve [--port 8080] [--host 127.0.0.1]
 *                    [--data ./.edge-service | --database postgres://... | env EDGE_DATABASE_URL]
 *                    [--api-key KEY | env EDGE_API_KEY] [--rate-limit N/min]
 * edge-service request METHOD PATH [--body JSON] [--data DIR | --url URL [--api-key KEY]]
 * edge-service migrate --from DIR --to postgres://...
 * edge-service --help | --version
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startServer } from "../service/server";
import { DATA_TABLES } from "../service/store";
import { openStore } from "../service/store-open";
import { embeddedTransport, httpTransport } from "../transport";

const USAGE = `usage: edge-service serve [--port 8080] [--host 127.0.0.1]
                          [--data ./.edge-service | --database postgres://... | env EDGE_DATABASE_URL]
                          [--api-key KEY | env EDGE_API_KEY] [--rate-limit N/min]
                          [--pool-size 10]
         (--database: the PostgreSQL store; run several replicas on one database behind a load
          balancer; --pool-size: connections of this replica's pool)
       edge-service request METHOD PATH [--body JSON]
                          [--data ./.edge-service | --url URL [--api-key KEY | env EDGE_API_KEY]]
         (one API call, e.g. "request GET /edges/https"; prints the JSON answer, exits 1 on an error status)
       edge-service migrate --from DIR --to postgres://...
         (copies a SQLite data directory into an empty PostgreSQL database, in one transaction)
       edge-service --help | --version`;

/** Copies every row of a SQLite data directory into an empty PostgreSQL database. */
async function migrate(from: string | undefined, to: string | undefined): Promise<number> {
  if (!from || !to) throw new Error("migrate needs --from DIR (a data directory) and --to postgres://...");
  if (!existsSync(join(from, "edge.db"))) {
    throw new Error(`${from} holds no edge.db: pass the data directory the service ran with (--data)`);
  }
  const source = await openStore({ dataDir: from });
  try {
    const target = await openStore({ dataDir: from, databaseUrl: to });
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

/** One API call against a data directory (in-process) or a running service. */
async function request(
  method: string,
  path: string,
  opts: { body?: string; data: string; url?: string; apiKey?: string },
) {
  if (!path.startsWith("/")) throw new Error(`PATH must start with "/", got ${path}`);
  const transport = opts.url
    ? httpTransport({ baseUrl: opts.url, apiKey: opts.apiKey, retries: 2 })
    : embeddedTransport({ dataDir: opts.data });
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
      from: { type: "string" },
      to: { type: "string" },
      help: { type: "boolean", short: "h" },
      version: { type: "boolean" },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (values.version) {
    console.log((require("pulumi-edge/package.json") as { version: string }).version);
    return 0;
  }
  if (positionals[0] === "request" && positionals.length === 3) {
    const apiKey = values["api-key"] ?? (process.env.EDGE_API_KEY || undefined);
    return request(positionals[1]!, positionals[2]!, {
      body: values.body,
      data: values.data,
      url: values.url,
      apiKey,
    });
  }
  if (positionals[0] === "migrate" && positionals.length === 1) return migrate(values.from, values.to);
  if (positionals[0] !== "serve" || positionals.length > 1) {
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
  const server = await startServer({
    dataDir: values.data,
    databaseUrl,
    poolSize,
    host: values.host,
    port,
    apiKey,
    rateLimitPerMinute,
    log: (line) => console.error(`${new Date().toISOString()} ${line}`),
  });
  console.log(
    `edge-service listening on ${server.url} (${server.store.kind === "sqlite" ? "data" : "database"}: ${server.store.location}, auth: ${apiKey ? "API key" : "none, loopback only"})`,
  );

  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      console.error(`${signal} received: finishing in-flight requests`);
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
    const usage = error.code?.startsWith("ERR_PARSE_ARGS_") ? "; run edge-service --help" : "";
    console.error(`edge-service: ${error.message}${usage}`);
    process.exit(usage ? 2 : 1);
  },
);
