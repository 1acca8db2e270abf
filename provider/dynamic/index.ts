/**
 * The dynamic face: Pulumi's dynamic ResourceProvider over the face-neutral lifecycles. It only
 * adapts: the inputs the face adds for the host (`__provider`, `__urn`, `__anchor`: see resources/glue) ride
 * along untouched, reads of a gone object answer an empty id, the client comes from the
 * provider's configuration at call time, check failures are named as the engine prints them, and
 * the secret leaves go back wrapped as secrets (the host takes none in, but the engine keeps
 * those it sends back: see engine/secrets).
 */
import type * as dynamic from "@pulumi/pulumi/dynamic";
import { withLastWrite } from "../engine/call";
import type { CreateAnchor, ProviderProcess } from "../engine/process";
import {
  ANCHOR_KEY,
  isAnchor,
  ORGANIZATION_KEY,
  PLACE_KEY,
  STACK_ANCHOR,
  STACK_ANCHOR_NAME,
} from "../identity";
import { concealLeaves, isSecretWrapper } from "../engine/secrets";
import { type Inputs, LIFECYCLES, type ResourceKind } from "../lifecycle";
import { checkedInputs } from "../lifecycle/types";
import { SECRET_LEAVES } from "../model";
import { isProps, type Props } from "../model/check";
import { engineFailures } from "../model/failures";

/** The face's own inputs (`__provider`, `__urn`), apart from the program's. */
function split(value: unknown): { program: Props; face: Props } {
  const program: Props = {};
  const face: Props = {};
  if (isProps(value))
    for (const [k, v] of Object.entries(value)) (k.startsWith("__") ? face : program)[k] = v;
  return { program, face };
}

const urnOf = (inputs: unknown): string | undefined => {
  const urn = split(inputs).face.__urn;
  return typeof urn === "string" && urn !== "" ? urn : undefined;
};

/**
 * The stack's anchor a resource's inputs carry (see resources/glue), with its recorded place and
 * the stack's organization, for the create to judge where the state lives now.
 */
function anchorOf(inputs: unknown, urn: string | undefined): CreateAnchor {
  const { face } = split(inputs);
  const anchor = face[ANCHOR_KEY];
  const place = face[PLACE_KEY];
  const organization = face[ORGANIZATION_KEY];
  // The StackAnchor's URN: this resource's stack and project (`urn:pulumi:<stack>::<project>::…`).
  const [stack, project] = (urn ?? "").replace(/^urn:pulumi:/, "").split("::");
  const anchorUrn = `urn:pulumi:${stack}::${project}::pulumi-nodejs:dynamic/edge:${STACK_ANCHOR}::${STACK_ANCHOR_NAME}`;
  return {
    record: isAnchor(anchor) ? { anchor, ...(typeof place === "string" ? { place } : {}) } : undefined,
    organization: typeof organization === "string" ? organization : undefined,
    renew: `Run \`pulumi up\` once without --target, or with the stack's anchor among the targets: --target '${anchorUrn}' (the anchor is judged, and renewed, where it is part of the run).`,
  };
}

/**
 * The `StackAnchor` resource (see resources/glue): its create makes the stack's anchor
 * (provider/identity), which its state then keeps as its outputs `anchor` and `place`; it has no
 * object on the service. Each run judges the stored anchor where the state lives now (the rule of
 * identity/anchor): kept as it is (no change: a drift check stays green), or, where the state was
 * copied or moved or the anchor damaged, replaced by a new one through an update the preview shows.
 * Its inputs: `organization` (the program's `pulumi.getOrganization()`), `__urn`.
 */
export function stackAnchorProvider(host: ProviderProcess): dynamic.ResourceProvider<Props, Props> {
  const organization = (inputs: Props) =>
    typeof inputs.organization === "string" ? inputs.organization : undefined;
  const judged = (olds: Props, news: Props) =>
    host.anchorFor({ anchor: olds.anchor, place: olds.place }, host.log(urnOf(news)), organization(news));
  const outs = (record: { anchor: string; place?: string }): Props =>
    record.place === undefined ? { anchor: record.anchor } : { anchor: record.anchor, place: record.place };
  return {
    check: async (_olds, news) => ({ inputs: news }),
    diff: async (_id, olds, news) => ({ changes: judged(olds, news).changed }),
    // A stack's first anchor: judged from nothing, so an unknown place is said.
    create: async (news) => ({ id: "anchor", outs: outs(judged({}, news).record) }),
    update: async (_id, olds, news) => ({ outs: outs(judged(olds, news).record) }),
    read: async (id, props) => ({ id, props }),
    delete: async () => undefined,
  };
}

/**
 * Outputs with the resource's URN among them (`__urn`, which diffs ignore as they do the inputs'):
 * the host hands `read` the stored outputs and no URN, and a refresh's drift warning names the
 * resource by it.
 */
const withUrn = (outs: Props, urn: string | undefined): Props => (urn ? { ...outs, __urn: urn } : outs);

/**
 * The provider as the host sees it: property maps in and out. What goes back carries the engine's
 * secret wrappers (no longer the model's types); what comes in is what this face's check answered
 * (typed again with checkedInputs, as on the packaged face).
 */
export function dynamicProvider<K extends ResourceKind>(
  kind: K,
  host: ProviderProcess,
): dynamic.ResourceProvider<Props, Props> {
  const life = LIFECYCLES[kind];
  const leaves = SECRET_LEAVES[kind];
  /** Values going back to the engine, their secret leaves wrapped (the engine keeps the program's marks). */
  const concealed = (value: object): Props => concealLeaves(value, leaves);
  const typed = (inputs: Props) => checkedInputs<Inputs<K>>(inputs);
  return {
    async check(olds, news) {
      // The engine keeps the face's inputs among the inputs: hand them back untouched.
      const { program, face } = split(news);
      const { inputs, failures } = life.check(program, olds);
      return {
        inputs: Object.assign(concealed(inputs), face),
        failures: engineFailures(failures, program, { isSecretWrapper, leaves }),
      };
    },
    async diff(id, olds, news) {
      const plan = life.diff(olds, typed(news), id);
      host.diffed(kind, id, olds, plan);
      // Always a definite answer: a missing `changes` would make the engine diff inputs itself.
      return {
        changes: plan.changed.length > 0,
        replaces: plan.replaces,
        deleteBeforeReplace: plan.deleteBeforeReplace === true,
      };
    },
    async create(inputs) {
      const urn = urnOf(inputs);
      const { client, ctx } = host.operation(urn, { create: anchorOf(inputs, urn) });
      const { id, outs } = await life.create(client, typed(inputs), ctx);
      return { id, outs: withUrn(withLastWrite(concealed(outs), client), urn) };
    },
    async read(id, props) {
      // The host hands read no URN: the outputs carry it (see withUrn), for the drift warnings.
      const urn = urnOf(props);
      const { client, ctx } = host.operation(urn, { stored: props });
      const found = await life.read(client, id, props, ctx);
      if (found) {
        const outs = withUrn(withLastWrite(concealed(found.outs), client, props), urn);
        return { id: found.id, props: outs, inputs: concealed(found.inputs) };
      }
      return { id: "", props: {} }; // gone (a fresh object: the host mutates it)
    },
    async update(id, olds, news) {
      const urn = urnOf(news);
      const { client, ctx } = host.operation(urn);
      const outs = concealed(await life.update(client, id, olds, typed(news), ctx));
      return { outs: withUrn(withLastWrite(outs, client, olds), urn) };
    },
    async delete(id, props) {
      const { client, ctx } = host.operation(undefined);
      await life.delete(client, id, props, ctx);
    },
  };
}
