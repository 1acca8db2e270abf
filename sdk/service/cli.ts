#!/usr/bin/env node
/**
 * edge-service serve [--port 8080] [--host 127.0.0.1] [--data ./.edge-service]
 *                    [--api-key KEY | env EDGE_API_KEY] [--rate-limit N/min]
 */
import { parseArgs } from "node:util";
import { startServer } from "./server";

const USAGE = `usage: edge-service serve [--port 8080] [--host 127.0.0.1] [--data ./.edge-service]
                          [--api-key KEY | env EDGE_API_KEY] [--rate-limit N/min]`;

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
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help || positionals[0] !== "serve" || positionals.length > 1) {
    console.error(USAGE);
    return values.help ? 0 : 2;
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
  const server = await startServer({
    dataDir: values.data,
    host: values.host,
    port,
    apiKey,
    rateLimitPerMinute,
    log: (line) => console.error(`${new Date().toISOString()} ${line}`),
  });
  console.log(
    `edge-service listening on ${server.url} (data: ${server.store.location}, auth: ${apiKey ? "API key" : "none, loopback only"})`,
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
  (error: Error) => {
    console.error(`edge-service: ${error.message}`);
    process.exit(1);
  },
);
