// npm pack's postpack: beside the npm tarball, the other languages' SDKs as their own tools
// install them from a file, so that a Python or Go user needs no checkout of this repository:
//   pulumi_edge-<version>-py3-none-any.whl   pip install ./pulumi_edge-<version>-py3-none-any.whl
//   pulumi-edge-go-<version>/                the Go module github.com/pulumi-edge/pulumi-edge/sdk/go:
//                                            go mod edit -replace github.com/pulumi-edge/pulumi-edge/sdk/go=./pulumi-edge-go-<version>
// Both are built by prepack (npm run sdks) and ship inside the tarball too (dist/python, dist/sdks/go).
// And what a Pulumi user of any language needs no npm for (scripts/plugin-archive.mjs):
//   pulumi-resource-edge-v<version>-<os>-<arch>.tar.gz   the plugin, as the engine downloads it from
//                                            the SDKs' pluginDownloadURL (EDGE_PLUGIN_DOWNLOAD_URL)
//   edge-service-v<version>-<os>-<arch>.tar.gz   the service, the same way (see Dockerfile)
//   checksums.txt                            their SHA-256 (sha256sum -c; pulumi plugin install --checksum)
// for linux-amd64, linux-arm64 and darwin-arm64, or EDGE_ARCHIVE_PLATFORMS (comma-separated).
// Only for `npm pack` (not publish, not --dry-run): it writes where the tarball goes.
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

import { buildArchives } from "./plugin-archive.mjs";

const require = createRequire(import.meta.url);
const ROOT = require("./engine.js").ROOT;
const { version } = require("../package.json");
const log = (m) => console.error(`[postpack] ${m}`); // stdout is npm pack's (the tarball's name, --json)

if (process.env.npm_command !== "pack" || process.env.npm_config_dry_run === "true") process.exit(0);

// npm resolves --pack-destination against the directory it was run in.
const dest = path.resolve(
  process.env.INIT_CWD ?? process.cwd(),
  process.env.npm_config_pack_destination ?? ".",
);
fs.mkdirSync(dest, { recursive: true });

const wheel = `pulumi_edge-${version}-py3-none-any.whl`;
const builtWheel = path.join(ROOT, "dist", "python", wheel);
if (!fs.existsSync(builtWheel)) throw new Error(`${builtWheel} is missing: run npm run sdks`);
fs.copyFileSync(builtWheel, path.join(dest, wheel));
log(`${path.join(dest, wheel)}`);

const goModule = path.join(dest, `pulumi-edge-go-${version}`);
fs.rmSync(goModule, { recursive: true, force: true });
fs.cpSync(path.join(ROOT, "dist", "sdks", "go"), goModule, { recursive: true });
log(`${goModule}${path.sep} (Go module github.com/pulumi-edge/pulumi-edge/sdk/go)`);

await buildArchives({ out: dest, platforms: process.env.EDGE_ARCHIVE_PLATFORMS?.split(",").filter(Boolean) });
