// npm run generate: every generated file, and a dist/ that holds them. The generators run from the
// build (the contract and the schema as dist/ has them), and three of their outputs are sources the
// build compiles (the dynamic Args and outputs, the client's methods): written after the build,
// they would be missing from dist/ until the next one, so an operation just added would have no
// client method at run time. So: build, generate, and build again when a compiled output changed.
//
// The first build may fail where the sources still name what a generator is about to rewrite (an
// operation taken out of the table, a client method that calls it): tsc emits all the same, the
// generators run from that, and the second build must pass.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** The generated files that the build compiles into dist/. */
const COMPILED = ["provider/resources/args.ts", "provider/resources/outputs.ts", "sdk/client/operations.ts"];
/** The generators, in order (each after what it reads: the args from the schema). */
const STEPS = [
  ["npm", ["run", "--silent", "generate:schema"]],
  ["npm", ["run", "--silent", "generate:args"]],
  ["node", ["scripts/api-docs.js"]],
  ["node", ["scripts/client-methods.js"]],
  ["npm", ["run", "--silent", "docs"]],
];

const run = (cmd, args) => execFileSync(cmd, args, { cwd: ROOT, stdio: "inherit" });
const digest = () =>
  COMPILED.map((f) => {
    const file = path.join(ROOT, f);
    return fs.existsSync(file) ? createHash("sha256").update(fs.readFileSync(file)).digest("hex") : "";
  });

let built = true;
try {
  run("npm", ["run", "build", "--silent"]);
} catch {
  built = false;
  console.error(
    "[generate] the build failed before generating; generating from what it emitted, then building again",
  );
}
const before = digest();
for (const [cmd, args] of STEPS) run(cmd, args);
const after = digest();
const changed = COMPILED.filter((_, i) => before[i] !== after[i]);
if (!built || changed.length > 0) {
  if (changed.length > 0) console.log(`[generate] rebuilding dist/ with ${changed.join(", ")}`);
  run("npm", ["run", "build", "--silent"]);
}
