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

export abstract class EdgeDynamicResource extends pulumi.CustomResource {
  protected constructor(
    kind: ProviderKind,
    type: string,
    name: string,
    props: pulumi.Inputs,
    opts: pulumi.CustomResourceOptions = {},
  ) {
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
