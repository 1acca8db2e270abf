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
 * - `__anchor`: the stack's anchor, which its state keeps as the output of one `StackAnchor`
 *   resource (`pulumi-nodejs:dynamic/edge:StackAnchor::pulumi-edge`, made with the stack's first
 *   resource of ours, deleted last): the other half of that identity (provider/identity). The
 *   anchor is told the stack's organization, which names where the state lives on a backend that
 *   several organizations share (identity/place).
 * Diffs ignore all three.
 */
import * as pulumi from "@pulumi/pulumi";
import { ANCHOR_KEY, STACK_ANCHOR } from "../identity";
import { TYPE_NAMES } from "../model/kinds";
import type { ProviderKind } from "../runtime";

/** The serialized provider of a kind: the smallest module the dynamic provider host accepts. */
const providerModule = (kind: ProviderKind | "stackAnchor"): string =>
  `exports.handler = () => require("pulumi-edge/runtime").handlers.${kind};\n`;

/**
 * The stack's anchor in its state (provider/identity): a random value the dynamic provider host
 * makes at the resource's create and keeps as its output, with the place of the state; no object
 * on the service.
 */
class StackAnchor extends pulumi.CustomResource {
  declare readonly anchor: pulumi.Output<string>;
  constructor() {
    const token = `pulumi-nodejs:dynamic/edge:${STACK_ANCHOR}`;
    super(token, STACK_ANCHOR_NAME, {
      __provider: providerModule("stackAnchor"),
      __urn: urnOf(STACK_ANCHOR_NAME, token, undefined),
      organization: organization(),
      anchor: undefined,
      place: undefined,
    });
  }
}

/** The stack's organization; none outside an engine's run (a program under test without mocks). */
function organization(): string | undefined {
  try {
    return pulumi.getOrganization();
  } catch {
    return undefined;
  }
}

/** The StackAnchor resource's name: one per stack. */
const STACK_ANCHOR_NAME = "pulumi-edge";

/**
 * What a deployment's program has done once: made its stack's anchor, checked its config. An
 * Automation API process may run several deployments, one after another or at once, so this is
 * keyed by the deployment's monitor; resource constructors are handed nothing else to hold it.
 */
interface Deployment {
  anchor?: pulumi.Output<string>;
  configChecked?: boolean;
}
const deployments = new WeakMap<object, Deployment>();

/** This deployment's record; undefined outside a deployment (no monitor: nothing to register). */
function deployment(): Deployment | undefined {
  const monitor = pulumi.runtime.getMonitor();
  if (!monitor) return undefined;
  const known = deployments.get(monitor) ?? {};
  deployments.set(monitor, known);
  return known;
}

/** One anchor per deployment. */
function stackAnchor(): pulumi.Output<string> | undefined {
  const d = deployment();
  if (!d) return undefined;
  d.anchor ??= new StackAnchor().anchor;
  return d.anchor;
}

/**
 * The URN the engine gives the resource: a plain string when it has no parent (the common case:
 * an Output per resource costs the program a captured stack trace or more), else derived from
 * the parent's URN.
 */
function urnOf(name: string, token: string, parent: pulumi.Resource | undefined): pulumi.Input<string> {
  if (parent) return pulumi.createUrn(name, token, parent);
  return `urn:pulumi:${pulumi.getStack()}::${pulumi.getProject()}::${token}::${name}`;
}

/**
 * The engine saves the whole stack config as the dynamic provider's inputs in the state, a value
 * typed without `--secret` in plaintext: a plaintext `edge:apiKey`, or a plaintext `edge:clientKey`
 * holding the key itself (a file's path is no secret), stops the program before any resource is
 * registered, so it never lands there.
 */
function refusePlaintextCredentials(): void {
  const d = deployment();
  if (d?.configChecked) return;
  if (d) d.configChecked = true;
  // The SDK's own test (marked internal in its typings; present since 3.x).
  const isConfigSecret: unknown = Reflect.get(pulumi.runtime, "isConfigSecret");
  if (typeof isConfigSecret !== "function") return;
  const plaintext = (key: string) => Reflect.apply(isConfigSecret, undefined, [key]) !== true;
  if (pulumi.runtime.getConfig("edge:apiKey") && plaintext("edge:apiKey")) {
    throw new pulumi.RunError(
      "edge:apiKey is set in plaintext, and the engine would save it in the state as it is. " +
        "Set it as a secret: pulumi config set --secret edge:apiKey <key> (or give it in EDGE_API_KEY).",
    );
  }
  if (
    pulumi.runtime.getConfig("edge:clientKey")?.includes("PRIVATE KEY-----") &&
    plaintext("edge:clientKey")
  ) {
    throw new pulumi.RunError(
      "edge:clientKey holds a private key in plaintext, and the engine would save it in the state as it is. " +
        'Set it as a secret (pulumi config set --secret edge:clientKey -- "$(cat client.key)"), ' +
        "give the key file's path instead, or give it in EDGE_CLIENT_KEY.",
    );
  }
}

export abstract class EdgeDynamicResource extends pulumi.CustomResource {
  protected constructor(
    kind: ProviderKind,
    name: string,
    props: pulumi.Inputs,
    opts: pulumi.CustomResourceOptions = {},
  ) {
    refusePlaintextCredentials();
    const token = `pulumi-nodejs:dynamic/edge:${TYPE_NAMES[kind]}`;
    super(
      token,
      name,
      {
        ...props,
        __provider: providerModule(kind),
        // A lookup (`get`) creates nothing: it needs no identity.
        __urn: opts.id === undefined ? urnOf(name, token, opts.parent) : undefined,
        [ANCHOR_KEY]: opts.id === undefined ? stackAnchor() : undefined,
      },
      opts,
    );
  }
}
