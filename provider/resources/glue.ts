/**
 * The base of the four dynamic resources: a custom resource of Pulumi's dynamic provider
 * (`pulumi-nodejs:dynamic/edge:<Type>`) with two inputs the engine's provider process needs.
 *
 * - `__provider`: what the dynamic provider host loads for the resource. The host needs a module
 *   whose `handler()` returns the provider (`require-from-string(...).handler()`, in
 *   `@pulumi/pulumi/cmd/dynamic-provider`), so that is all we store: one line that loads this
 *   package by name. `pulumi.dynamic.Resource` would serialize a closure instead (2.6 KiB in the
 *   inputs and again in the outputs of every resource). State written from one checkout
 *   refreshes and destroys from another: nothing in it names a path.
 * - `__urn`: the resource's own URN, which the host does not hand to `create`: the identity its
 *   creates carry, so that a create is made exactly once across runs (provider/identity).
 *   Diffs ignore both.
 */
import * as pulumi from "@pulumi/pulumi";
import type { ProviderKind } from "../runtime";

/** The serialized provider of a kind: the smallest module the dynamic provider host accepts. */
const providerModule = (kind: ProviderKind): string =>
  `exports.handler = () => require("pulumi-edge/runtime").handlers.${kind};\n`;

/**
 * The URN the engine gives the resource: a plain string when it has no parent (the common case:
 * an Output per resource costs the program a captured stack trace or more), else derived from
 * the parent's URN.
 */
function urnOf(name: string, token: string, parent: pulumi.Resource | undefined): pulumi.Input<string> {
  if (parent) return pulumi.createUrn(name, token, parent);
  return `urn:pulumi:${pulumi.getStack()}::${pulumi.getProject()}::${token}::${name}`;
}

let configChecked = false;

/**
 * The engine saves the whole stack config as the dynamic provider's inputs in the state, a value
 * typed without `--secret` in plaintext: a plaintext `edge:apiKey` stops the program before any
 * resource is registered, so it never lands there.
 */
function refusePlaintextApiKey(): void {
  if (configChecked) return;
  configChecked = true;
  // The SDK's own test (marked internal in its typings; present since 3.x).
  const isConfigSecret: unknown = Reflect.get(pulumi.runtime, "isConfigSecret");
  if (typeof isConfigSecret !== "function") return;
  if (
    pulumi.runtime.getConfig("edge:apiKey") &&
    Reflect.apply(isConfigSecret, undefined, ["edge:apiKey"]) !== true
  ) {
    throw new pulumi.RunError(
      "edge:apiKey is set in plaintext, and the engine would save it in the state as it is. " +
        "Set it as a secret: pulumi config set --secret edge:apiKey <key> (or give it in EDGE_API_KEY).",
    );
  }
}

export abstract class EdgeDynamicResource extends pulumi.CustomResource {
  protected constructor(
    kind: ProviderKind,
    type: string,
    name: string,
    props: pulumi.Inputs,
    opts: pulumi.CustomResourceOptions = {},
  ) {
    refusePlaintextApiKey();
    const token = `pulumi-nodejs:dynamic/edge:${type}`;
    super(
      token,
      name,
      {
        ...props,
        __provider: providerModule(kind),
        // A lookup (`get`) creates nothing: it needs no identity.
        __urn: opts.id === undefined ? urnOf(name, token, opts.parent) : undefined,
      },
      opts,
    );
  }
}
