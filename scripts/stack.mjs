// The main job: deploys (or destroys) the root Pulumi.yaml stack against the embedded edge
// service, with a local file backend: offline, no prompts. Usage: node scripts/stack.mjs up|destroy|preview
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { ROOT, MAIN_STATE_DIR, directoryStack } = require("./engine.js");

const action = process.argv[2] ?? "up";
const stateDir = MAIN_STATE_DIR;
const stack = await directoryStack({ workDir: ROOT, stackName: process.env.EDGE_STACK ?? "dev", stateDir });
const onOutput = (s) => process.stdout.write(s);

if (action === "up") {
  await stack.up({ onOutput, color: "never" });
  const outputs = await stack.outputs();
  console.log("\nOutputs:");
  for (const [name, { value, secret }] of Object.entries(outputs)) {
    console.log(`  ${name}: ${secret ? "[secret]" : JSON.stringify(value, null, 2).replace(/\n/g, "\n  ")}`);
  }
} else if (action === "preview") {
  await stack.preview({ onOutput, color: "never", diff: true });
} else if (action === "destroy") {
  await stack.destroy({ onOutput, color: "never" });
} else {
  console.error("usage: node scripts/stack.mjs up|preview|destroy");
  process.exit(2);
}
