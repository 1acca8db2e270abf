#!/usr/bin/env node
// Writes sdk/client/operations.ts: one typed method of the client per operation of the contract's
// table (OPERATIONS), named after its operationId (`create_route` → `createRoute`), its path's
// parameters first, then its body, its query options and its create options as the table says.
// So an operation added to the table is a client method after `npm run generate`, with no edit of
// the client. Run from the built contract (dist): `node scripts/client-methods.js [--check]`; the
// tests (tests/service/client-methods.test.ts) run --check.
const fs = require("node:fs");
const path = require("node:path");

const ROOT = path.join(__dirname, "..");
const OUT = "sdk/client/operations.ts";
const FILE = path.join(ROOT, OUT);

const camel = (wire) => wire.replace(/_([a-z])/g, (_m, c) => c.toUpperCase());

/** Every operation of the table with the expression that reaches it (`OPS.routes.create`). */
function* operations(value, at) {
  if (value && typeof value === "object" && typeof value.id === "string" && typeof value.path === "string") {
    yield { op: value, ref: at };
    return;
  }
  for (const [k, v] of Object.entries(value))
    yield* operations(v, /^\w+$/.test(k) ? `${at}.${k}` : `${at}[${JSON.stringify(k)}]`);
}

function method({ op, ref }) {
  const names = [...op.path.matchAll(/\{(\w+)\}/g)].map(([, n]) => n);
  const params = names.map((n) => `${camel(n)}: string`);
  const opts = [];
  if (op.body) {
    // A body every field of which is optional may be left out: it is then `{}`.
    const optional = op.body.schema.safeParse({}).success;
    params.push(`body: BodyOf<typeof ${ref}>${optional ? " = {}" : ""}`);
    opts.push("body");
  }
  if (op.query) {
    // Optional only when the query may be empty: a required parameter is required here too (a call
    // without it would compile and be answered 400).
    const optional = op.query.safeParse({}).success;
    params.push(`query${optional ? "?" : ""}: QueryOptionsOf<typeof ${ref}>`);
    opts.push("query");
  }
  if (op.idempotent) {
    params.push("create?: CreateOptions");
    opts.push("create");
  }
  const pathParams = `{ ${names.map((n) => (camel(n) === n ? n : `${n}: ${camel(n)}`)).join(", ")} }`;
  const call = [
    ref,
    names.length > 0 ? pathParams : "{}",
    ...(opts.length > 0 ? [`{ ${opts.join(", ")} }`] : []),
  ];
  return [
    `  /** ${op.summary} (\`${op.method} ${op.path}\`). */`,
    `  ${camel(op.id)}(${params.join(", ")}): Promise<SuccessOf<typeof ${ref}>> {`,
    `    return this.request(${call.join(", ")});`,
    "  }",
  ].join("\n");
}

/** The file for the operation table `OPERATIONS`, formatted as the rest of the tree is. */
async function render(OPERATIONS) {
  // The probes and the API's own description are the service's to serve, not a client's to call.
  const ops = [...operations(OPERATIONS, "OPS")].filter(({ op }) => op.tag !== "Meta");
  const text = `// Generated from the contract's operation table by scripts/client-methods.js (npm run generate):
// do not edit. One method per operation; the client (./index) adds what spans several.
import type { CreateOptions } from "./create";
import {
  type BodyOf,
  type Operation,
  OPERATIONS as OPS,
  type PathParams,
  type QueryOptionsOf,
  type SuccessOf,
} from "../contract";

/** What every call of the table goes through (the client's one request). */
export interface Requester {
  request<O extends Operation>(
    op: O,
    params: Record<PathParams<O["path"]>, string>,
    opts?: { body?: unknown; query?: QueryOptionsOf<O>; create?: CreateOptions },
  ): Promise<SuccessOf<O>>;
}

/** The operations of the table, each a method. */
export abstract class EdgeOperations implements Requester {
  abstract request<O extends Operation>(
    op: O,
    params: Record<PathParams<O["path"]>, string>,
    opts?: { body?: unknown; query?: QueryOptionsOf<O>; create?: CreateOptions },
  ): Promise<SuccessOf<O>>;

${ops.map(method).join("\n\n")}
}
`;

  const prettier = require("prettier");
  return prettier.format(text, { ...(await prettier.resolveConfig(FILE)), filepath: FILE });
}

if (require.main === module) {
  const { OPERATIONS } = require(path.join(ROOT, "dist/sdk/contract"));
  render(OPERATIONS).then(
    (text) => {
      // --check: exit 1 when the committed file is not what the table gives (the tests run it).
      if (!process.argv.includes("--check")) {
        fs.writeFileSync(FILE, text);
        console.log(`wrote ${OUT}`);
      } else if (fs.readFileSync(FILE, "utf8") !== text) {
        console.error(`${OUT} is not what the operation table gives: run npm run generate`);
        process.exit(1);
      }
    },
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}

module.exports = { method, render, OUT };
