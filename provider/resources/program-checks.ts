/**
 * What a program checks of a resource's inputs before the Node.js SDK serializes them, on both
 * faces: the dynamic resources (./glue) and the packaged face's generated SDK, whose constructors
 * call this through `pulumi-edge/program-checks` (scripts/sdks.mjs wires it in).
 *
 * - **Text**, by the contract's one rule (sdk/contract/text.ts). The SDK's serialization (the
 *   protobuf encoding of @pulumi/pulumi/runtime/rpc) drops half of a surrogate pair alone without a
 *   word: the provider, the state and the service would get other text than the program wrote, and
 *   only the program still has it. U+0000 would reach the provider, which names it too; here it is
 *   named before anything is sent.
 * - **A private key in an input that is not secret** (`plaintextKeys`, the dynamic face): the
 *   dynamic provider host hands the provider no secrets, so only the program can tell which values
 *   are; the engine would keep it in the state as it is. (The packaged plugin is handed them, and
 *   refuses it in its check, whatever the program's language.)
 *
 * A plain value is checked at once: the constructor throws before the resource is registered. A
 * value given as an Output or a Promise is checked when it resolves, before the SDK serializes it:
 * the registration fails, and the resource's inputs are never sent. (An Output unknown in a
 * preview is checked by the update that knows it.)
 */
import * as pulumi from "@pulumi/pulumi";
import { textProblem } from "../../sdk/contract/text";
import { plaintextKeyInputProblem } from "../config";

export interface InputChecks {
  /** Refuse a private key in an input that is not secret (the dynamic face: see above). */
  plaintextKeys?: boolean;
}

/** A property path as the program writes it: `backend.backendId`, `hostports[0]`, `add["X-Id"]`. */
const step = (path: string, key: string | number): string =>
  typeof key === "number"
    ? `${path}[${key}]`
    : /^[A-Za-z_$][\w$]*$/.test(key)
      ? path === ""
        ? key
        : `${path}.${key}`
      : `${path}[${JSON.stringify(key)}]`;

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && Object.getPrototypeOf(v) === Object.prototype;

/**
 * The inputs `inputs` of resource `name` of type `type` (its class's name), checked: the same
 * values, each Output and Promise among them replaced by one that is checked when it resolves.
 * A plain value that fails throws a RunError (the CLI prints its message alone) naming the
 * resource and the input.
 */
export function checkedInputs(
  type: string,
  name: string,
  inputs: Readonly<Record<string, unknown>>,
  checks: InputChecks = {},
): Record<string, unknown> {
  const fail = (problem: string): never => {
    const error = new pulumi.RunError(`${type} "${name}": ${problem}. Nothing was sent.`);
    // The CLI prints a RunError's message alone; the SDK's handler formats its stack all the same
    // (util.inspect, which ts-node's source maps made cost the program a minute on this machine).
    error.stack = error.message;
    throw error;
  };

  const walk = (value: unknown, path: string, secret: boolean): unknown => {
    if (typeof value === "string") {
      const problem = textProblem(value);
      if (problem !== undefined) fail(`input ${path} ${problem}`);
      const key = checks.plaintextKeys && !secret ? plaintextKeyInputProblem(path, value) : undefined;
      if (key !== undefined) fail(`input ${key}`);
      return value;
    }
    if (pulumi.Output.isInstance(value)) {
      const output: pulumi.Output<unknown> = value;
      // Its apply keeps the Output's resources (the dependencies) and its secrecy; an unknown
      // value stays unknown, unchecked until the update that knows it.
      return output.apply(async (resolved) =>
        walk(resolved, path, secret || (await pulumi.isSecret(output))),
      );
    }
    if (value instanceof Promise) return value.then((resolved: unknown) => walk(resolved, path, secret));
    if (Array.isArray(value)) return value.map((v: unknown, i) => walk(v, step(path, i), secret));
    if (isPlainObject(value)) {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) {
        // A key the program chose (a header's name) is text the service keeps too.
        const problem = textProblem(k);
        if (problem !== undefined) fail(`input ${path} key ${JSON.stringify(k)} ${problem}`);
        out[k] = walk(v, step(path, k), secret);
      }
      return out;
    }
    return value;
  };

  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(inputs)) out[k] = walk(v, step("", k), false);
  return out;
}
