// @ts-check
/**
 * The sdkgen binary (scripts/sdkgen: Pulumi's code generators of the pinned release) for these
 * sources, built once per machine into ~/.cache/pulumi-edge/sdkgen/<hash of the sources>/ (the Go
 * build cache makes a rebuild quick). Used by scripts/sdks.mjs (the SDKs) and by the tests that run
 * a guide's `pulumi import` on this repository's language hosts (the code it prints).
 */
const { execFileSync } = require("node:child_process");
const { createHash } = require("node:crypto");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

const SRC = path.join(__dirname, "sdkgen");

/** @param {(message: string) => void} [log] @returns {string} the binary's path */
function sdkgenBinary(log = () => undefined) {
  const h = createHash("sha256");
  for (const f of ["main.go", "go.mod", "go.sum"]) h.update(fs.readFileSync(path.join(SRC, f)));
  const cache = process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache");
  const bin = path.join(cache, "pulumi-edge", "sdkgen", h.digest("hex").slice(0, 16), "sdkgen");
  if (!fs.existsSync(bin)) {
    const pulumi = require("../package.json").dependencies["@pulumi/pulumi"];
    log(`building the generator (go build of pulumi pkg/v3@${pulumi} codegen)`);
    fs.mkdirSync(path.dirname(bin), { recursive: true });
    // Built beside its final name, then renamed: a concurrent build never runs a half-written file.
    const partial = `${bin}.${process.pid}`;
    execFileSync("go", ["build", "-trimpath", "-o", partial, "."], {
      cwd: SRC,
      stdio: ["ignore", "inherit", "inherit"],
      env: { ...process.env, GOFLAGS: "-mod=mod" },
    });
    fs.renameSync(partial, bin);
  }
  return bin;
}

module.exports = { sdkgenBinary };
