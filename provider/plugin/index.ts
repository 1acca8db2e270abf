#!/usr/bin/env node
/** The `pulumi-resource-edge` plugin: started by the Pulumi engine, serves the packaged face. */
import { EdgeProvider } from "./provider";
import { serve } from "./serve";

serve(new EdgeProvider(), process.argv.slice(2)).catch((e: unknown) => {
  console.error(`pulumi-resource-edge: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
