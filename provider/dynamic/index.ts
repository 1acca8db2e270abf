/**
 * The dynamic face: Pulumi's dynamic ResourceProvider over the face-neutral lifecycles. It only
 * adapts: the inputs the face adds for the host (`__provider`, `__urn`: see resources/glue) ride
 * along untouched, reads of a gone object answer an empty id, and the client comes from the
 * provider's configuration at call time.
 */
import type * as dynamic from "@pulumi/pulumi/dynamic";
import { operation } from "../engine/call";
import { type Inputs, LIFECYCLES, type Outputs, type ResourceKind } from "../lifecycle";
import { isProps, type Props } from "../model/check";

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
 * What a read answers in the SDK's one Outputs type: outputs, the canonical inputs (its
 * ReadResult types `inputs` as outputs) or nothing (gone).
 */
type ReadAnswer<K extends ResourceKind> = Outputs<K> | Inputs<K> | Record<string, never>;

export function dynamicProvider<K extends ResourceKind>(
  kind: K,
): dynamic.ResourceProvider<Inputs<K>, ReadAnswer<K>> {
  const life = LIFECYCLES[kind];
  return {
    async check(olds, news) {
      // The engine keeps the face's inputs among the inputs: hand them back untouched.
      const { program, face } = split(news);
      const { inputs, failures } = life.check(program, olds);
      return { inputs: Object.assign({}, inputs, face), failures };
    },
    async diff(id, olds, news) {
      const { changed, replaces } = life.diff(olds, news, id);
      // Always a definite answer: a missing `changes` would make the engine diff inputs itself.
      return { changes: changed.length > 0, replaces, deleteBeforeReplace: false };
    },
    async create(inputs) {
      const { client, ctx } = operation(urnOf(inputs), { create: true });
      return life.create(client, inputs, ctx);
    },
    async read(id, props) {
      const { client, ctx } = operation(undefined);
      const found = await life.read(client, id, props, ctx);
      if (found) return { id: found.id, props: found.outs, inputs: found.inputs };
      return { id: "", props: {} }; // gone (a fresh object: the host mutates it)
    },
    async update(id, olds, news) {
      const { client, ctx } = operation(urnOf(news));
      return { outs: await life.update(client, id, olds, news, ctx) };
    },
    async delete(id, props) {
      const { client, ctx } = operation(undefined);
      await life.delete(client, id, props, ctx);
    },
  };
}
