/**
 * pulumi-edge export: adopts a fleet of edges made outside Pulumi. Reads them from the service
 * (the same connection settings as the providers) and writes edges.yaml (the declarative file,
 * validated by loading it back) and import.json (for `pulumi import --file`). Secret values stay
 * out of both: edges.yaml references them as `!secret <key>`, and they are written only where
 * `--secrets-dir` asks.
 */
import { chmodSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { errorMessage } from "../../sdk/contract";
import { VERSION } from "../../sdk/version";
import { type ParsedCommandLine, parseCommandLine, UsageError, usageExit } from "../../sdk/command-line";
import { edgeClient } from "../../provider/client";
import { environmentSettings } from "../../provider/config";
import { parseEdgeConfig } from "../../provider/declarative/load";
import { exportFleet, filterFleet } from "./fleet";
import { readFleet } from "./read";

export const EXPORT_USAGE = `usage: pulumi-edge export [--edge ID]... [--description-match REGEX] [--metadata-match REGEX]
                          [--out DIR] [--force] [--secrets-dir DIR]
                          [--base-url URL | env EDGE_API_URL] [--data-dir DIR | env EDGE_DATA_DIR]
         Reads edges made outside Pulumi from the edge service and writes, for adopting them:
           DIR/edges.yaml   the declarative file (loadEdgeConfig), every edge, route and TLS IP
                            restriction, defaults left out; secrets as !secret <config key>
           DIR/import.json  for \`pulumi import --file\`: the packaged provider's resources in the
                            names deployEdgeConfig gives them
         --edge ID               export this HTTPS or TLS edge (repeat for more); default: all edges
         --description-match RE  only edges whose description matches the regular expression
         --metadata-match RE     only edges whose metadata matches the regular expression
         --out DIR               where to write the two files (default: .)
         --force                 overwrite them if they exist
         --secrets-dir DIR       also write each secret's value to DIR/<config key> (mode 0600), to
                                 set it with \`pulumi config set --secret <key> < DIR/<key>\`;
                                 without it no secret value is written anywhere
         --base-url URL          a running edge service (default EDGE_API_URL; key: EDGE_API_KEY;
                                 https://: EDGE_CA_CERTIFICATE for a private CA, EDGE_CLIENT_CERTIFICATE
                                 and EDGE_CLIENT_KEY for mutual TLS); without one, the embedded
                                 service's data directory
         --data-dir DIR          that data directory (default EDGE_DATA_DIR, else ./.edge-service)`;

function regex(value: string | undefined, flag: string): RegExp | undefined {
  if (value === undefined) return undefined;
  try {
    return new RegExp(value);
  } catch (e) {
    throw new UsageError(`--${flag}: ${errorMessage(e)}`);
  }
}

const COMMAND = "pulumi-edge export";

/** Runs `pulumi-edge export` with its arguments (after `export`); the process's exit code. */
export async function runExport(argv: string[]): Promise<number> {
  try {
    return await exportCommand(argv);
  } catch (e) {
    return usageExit(COMMAND, e);
  }
}

const OPTIONS = {
  edge: { type: "string", multiple: true },
  "description-match": { type: "string" },
  "metadata-match": { type: "string" },
  out: { type: "string", default: "." },
  force: { type: "boolean", default: false },
  "secrets-dir": { type: "string" },
  "base-url": { type: "string" },
  "data-dir": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

type Values = ParsedCommandLine<{
  args: string[];
  allowPositionals: false;
  options: typeof OPTIONS;
}>["values"];

/** The two files written, under `--out`. */
interface ExportFiles {
  yaml: string;
  imports: string;
}

async function exportCommand(argv: string[]): Promise<number> {
  const { values } = parseCommandLine({ args: argv, allowPositionals: false, options: OPTIONS });
  if (values.help) {
    console.log(EXPORT_USAGE);
    return 0;
  }
  const filter = {
    descriptionMatch: regex(values["description-match"], "description-match"),
    metadataMatch: regex(values["metadata-match"], "metadata-match"),
  };
  const out = resolve(values.out);
  const files: ExportFiles = { yaml: join(out, "edges.yaml"), imports: join(out, "import.json") };
  const present = [files.yaml, files.imports].filter((f) => existsSync(f));
  if (present.length > 0 && !values.force) {
    console.error(`${COMMAND}: ${present.join(" and ")} already exist: add --force to overwrite`);
    return 1;
  }
  const settings = sourceSettings(values);
  if (!settings.baseUrl && !existsSync(join(settings.dataDir, "edge.db"))) {
    console.error(
      `${COMMAND}: no edge service data in ${settings.dataDir}: give --base-url URL (or EDGE_API_URL) ` +
        "for a running service, or --data-dir DIR for the embedded service's data directory",
    );
    return 1;
  }
  const source = settings.baseUrl ?? `the data directory ${settings.dataDir}`;

  const fleet = filterFleet(await readFleet(edgeClient(settings), values.edge ?? []), filter);
  const exported = exportFleet(fleet, {
    version: VERSION,
    header: [
      `Exported by \`pulumi-edge export\` from ${source}: deploy it with deployEdgeConfig(config, { resources: edge })`,
      `from "pulumi-edge/packaged", after \`pulumi import --file import.json\` (see import.json).`,
    ],
  });
  // What is written is what the declarative face reads: loaded back with its own loader first.
  await parseEdgeConfig(exported.yaml, files.yaml);
  mkdirSync(out, { recursive: true });
  writeFileSync(files.yaml, exported.yaml);
  writeFileSync(files.imports, `${JSON.stringify({ resources: exported.imports }, null, 2)}\n`);
  tellWritten(exported, files, source);
  const secretsDir = values["secrets-dir"] ? resolve(values["secrets-dir"]) : undefined;
  if (exported.secrets.length > 0) writeAndTellSecrets(exported.secrets, secretsDir);
  console.log(
    "\nThen, in a Pulumi project whose program deploys edges.yaml on the packaged provider:\n" +
      "  pulumi import --file import.json --protect=false --generate-code=false --yes\n" +
      "  pulumi preview --expect-no-changes",
  );
  return 0;
}

/** The service to read: the providers' settings, with --base-url and --data-dir over them. */
function sourceSettings(values: Values) {
  const env = environmentSettings();
  return {
    ...env,
    baseUrl: values["base-url"] ?? env.baseUrl,
    dataDir: values["data-dir"] ? resolve(values["data-dir"]) : env.dataDir,
  };
}

type Exported = ReturnType<typeof exportFleet>;

const shown = (f: string) => relative(process.cwd(), f) || f;
const n = (count: number, what: string) => `${count} ${what}${count === 1 ? "" : "s"}`;

/** What was exported, from where, into which files. */
function tellWritten(exported: Exported, files: ExportFiles, source: string): void {
  const { httpsEdges, routes, tlsEdges, ipRestrictions } = exported.counts;
  console.log(
    `exported ${n(httpsEdges, "HTTPS edge")} (${n(routes, "route")}) and ${n(tlsEdges, "TLS edge")} ` +
      `(${n(ipRestrictions, "IP restriction")}) from ${source}:`,
  );
  console.log(`  ${shown(files.yaml)}\n  ${shown(files.imports)} (${exported.imports.length} resources)`);
}

/** The secrets edges.yaml references: their values into `dir` (0600) if given, and how to set each. */
function writeAndTellSecrets(secrets: Exported["secrets"], dir: string | undefined): void {
  if (dir) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
    for (const s of secrets) writeFileSync(join(dir, s.key), s.value, { mode: 0o600 });
  }
  console.log(
    `\n${n(secrets.length, "secret")} referenced, not written, in edges.yaml (!secret <key>). ` +
      (dir
        ? `Their values are in ${shown(dir)} (mode 0600; delete it once set). Set them in the stack:`
        : "Set each in the stack with its value (or rerun with --secrets-dir DIR to have them written there):"),
  );
  for (const s of secrets) {
    const from = dir ? ` < ${shown(join(dir, s.key))}` : " <value>";
    console.log(`  pulumi config set --secret ${s.key}${from}    # ${s.where}`);
  }
}
