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
 * - `__anchorPlace` (the place the anchor was recorded at) and, off a file backend's default
 *   organization, `__organization`: a create judges its anchor where the state lives now, so that a
 *   run that leaves the StackAnchor out (`--target`) cannot create under a copied state's original
 *   anchor.
 * Diffs ignore all of them.
 */
import * as pulumi from "@pulumi/pulumi";
import { checkSettings, plaintextKeyProblem, settingsFor } from "../config";
import { ANCHOR_KEY, ORGANIZATION_KEY, PLACE_KEY, STACK_ANCHOR, STACK_ANCHOR_NAME } from "../identity";
import { TYPE_NAMES } from "../model/kinds";
import type { ProviderKind } from "../runtime";
import { checkedInputs } from "./program-checks";

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
  /** Where the state lived when the anchor was made; absent where that could not be told. */
  declare readonly place: pulumi.Output<string | undefined>;
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

/**
 * What a deployment's program has done once: made its stack's anchor, checked its config. An
 * Automation API process may run several deployments, one after another or at once, so this is
 * keyed by the deployment's monitor; resource constructors are handed nothing else to hold it.
 */
interface Deployment {
  anchor?: StackAnchor;
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

/**
 * What a resource's creates need of the stack's anchor (one per deployment): the anchor, the place
 * it was recorded at, and the stack's organization where it names the place (a file backend's
 * default organization names nothing, and costs the state nothing).
 */
function anchorInputs(): pulumi.Inputs {
  const d = deployment();
  if (!d) return {};
  d.anchor ??= new StackAnchor();
  const org = organization();
  return {
    [ANCHOR_KEY]: d.anchor.anchor,
    [PLACE_KEY]: d.anchor.place,
    ...(org === undefined || org === "organization" ? {} : { [ORGANIZATION_KEY]: org }),
  };
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
 * The stack's settings, checked where the program still has them, once per deployment, before any
 * resource is registered. The engine saves the whole stack config as the dynamic provider's inputs
 * in the state, a value typed without `--secret` in plaintext: a plaintext `edge:apiKey`, or a
 * private key in any key not set as a secret (`edge:clientCertificate` holding a combined PEM, say;
 * a file's path is no secret), stops the program here, so it never lands there. And the settings
 * are checked as a deploy uses them (the URL, the CA and client certificate read and parsed):
 * `preview --refresh` and `refresh --run-program` refresh with the configuration saved at the last
 * update, but they run the program, so settings the next `up` would refuse fail them too.
 */
function checkStackConfig(): void {
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
  for (const [key, value] of Object.entries(pulumi.runtime.allConfig())) {
    const problem = plaintext(key) ? plaintextKeyProblem(key, value) : undefined;
    if (problem) throw new pulumi.RunError(problem);
  }
  try {
    checkSettings(settingsFor({ get: (key) => pulumi.runtime.getConfig(key) }, process.env, process.cwd()));
  } catch (e) {
    throw new pulumi.RunError(e instanceof Error ? e.message : String(e));
  }
}

export abstract class EdgeDynamicResource extends pulumi.CustomResource {
  protected constructor(
    kind: ProviderKind,
    name: string,
    props: pulumi.Inputs,
    opts: pulumi.CustomResourceOptions = {},
  ) {
    checkStackConfig();
    const type = TYPE_NAMES[kind];
    const token = `pulumi-nodejs:dynamic/edge:${type}`;
    super(
      token,
      name,
      {
        ...checkedInputs(type, name, props, { plaintextKeys: true }),
        __provider: providerModule(kind),
        // A lookup (`get`) creates nothing: it needs no identity.
        __urn: opts.id === undefined ? urnOf(name, token, opts.parent) : undefined,
        ...(opts.id === undefined ? anchorInputs() : {}),
      },
      opts,
    );
  }
}
