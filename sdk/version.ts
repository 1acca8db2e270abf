/** This package's version, read once from its package.json (the plugin, both CLIs and the schema say it). */
import { readFileSync } from "node:fs";

const manifest: unknown = JSON.parse(readFileSync(require.resolve("pulumi-edge/package.json"), "utf8"));
const version: unknown =
  typeof manifest === "object" && manifest !== null ? Reflect.get(manifest, "version") : "";

export const VERSION: string = typeof version === "string" ? version : "0.0.0";
