/**
 * The identity a Pulumi resource's creates carry, so that a create is made exactly once across
 * runs: the next run derives the same identity again and the service answers it with the object
 * the lost create made (see `CreateOptions.identity` of the client: the `Idempotency-Key` is this
 * identity with the request).
 *
 * It is the resource's URN (stack, project, type, name and parents) within its stack's secret
 * salt: the random `encryptionsalt` (passphrase) or `encryptedkey` (cloud KMS) that
 * `pulumi stack init` writes into the stack's settings file. Two stacks with the same project,
 * stack and resource names (two backends, two teams) therefore never share a key, and so never
 * an object. Stacks whose settings hold neither (Pulumi Cloud's own secrets) are told apart by
 * their Cloud names already.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parse } from "yaml";

/** The stack name of a URN: `urn:pulumi:<stack>::<project>::<type>::<name>`. */
function stackOfUrn(urn: string): string {
  const match = /^urn:pulumi:([^:]+)::/.exec(urn);
  if (!match) throw new Error(`not a Pulumi URN: ${urn}`);
  return match[1]!;
}

const salts = new Map<string, string>();

/**
 * The secret salt in the settings of stack `stack` of the project in `projectDir` (the engine runs
 * providers there), or "" when there is none. Read once per process and stack.
 */
function stackSalt(stack: string, projectDir = process.cwd()): string {
  const cacheKey = `${resolve(projectDir)}\n${stack}`;
  let salt = salts.get(cacheKey);
  if (salt === undefined) {
    salt = readSalt(stack, projectDir);
    salts.set(cacheKey, salt);
  }
  return salt;
}

function readSalt(stack: string, projectDir: string): string {
  const project = readYaml(projectDir, "Pulumi");
  const configDir =
    typeof project?.stackConfigDir === "string" ? join(projectDir, project.stackConfigDir) : projectDir;
  const settings = readYaml(configDir, `Pulumi.${stack.split("/").pop()}`);
  for (const key of ["encryptionsalt", "encryptedkey"]) {
    const value = settings?.[key];
    if (typeof value === "string" && value !== "") return value;
  }
  return "";
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object";

function readYaml(dir: string, base: string): Record<string, unknown> | undefined {
  for (const ext of [".yaml", ".yml"]) {
    const file = join(dir, base + ext);
    if (!existsSync(file)) continue;
    try {
      const value: unknown = parse(readFileSync(file, "utf8"));
      return isRecord(value) ? value : undefined;
    } catch {
      return undefined; // not ours to judge: the engine reports a broken settings file
    }
  }
  return undefined;
}

/** The create identity of the resource `urn` (see the module's comment). */
export function createIdentity(urn: string, salt = stackSalt(stackOfUrn(urn))): string {
  return createHash("sha256").update(`pulumi-edge create identity v1\n${salt}\n${urn}`).digest("base64url");
}
