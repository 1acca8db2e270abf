/**
 * The dynamic face: Pulumi's dynamic ResourceProvider over the face-neutral lifecycles. It only
 * adapts: the serialized provider (`__provider`) rides along the inputs, reads of a gone object
 * answer an empty id, and the client comes from the provider's configuration at call time.
 */
import type * as dynamic from "@pulumi/pulumi/dynamic";
import { edgeClient } from "../config";
import { type Inputs, LIFECYCLES, type Outputs, type ResourceKind } from "../lifecycle";
import { isProps } from "../model/check";

export function dynamicProvider<K extends ResourceKind>(
  kind: K,
): dynamic.ResourceProvider<Inputs<K>, Outputs<K>> {
  type O = Outputs<K>;
  const life = LIFECYCLES[kind];
  return {
    async check(olds, news) {
      // The engine keeps the serialized provider among the inputs: hand it back untouched.
      const { __provider, ...program }: Record<string, unknown> = isProps(news) ? news : {};
      const { inputs, failures } = life.check(program, olds);
      return {
        inputs: __provider === undefined ? inputs : Object.assign({}, inputs, { __provider }),
        failures,
      };
    },
    async diff(id, olds, news) {
      const { changed, replaces } = life.diff(olds, news, id);
      // Always a definite answer: a missing `changes` would make the engine diff inputs itself.
      return { changes: changed.length > 0, replaces, deleteBeforeReplace: false };
    },
    create: (inputs) => life.create(edgeClient(), inputs),
    async read(id, props) {
      const found = await life.read(edgeClient(), id, props);
      // The SDK types read's `inputs` as outputs; they are the canonical inputs.
      if (found) return { id: found.id, props: found.outs, inputs: found.inputs as unknown as O };
      return { id: "", props: {} as O }; // gone (a fresh object: the host mutates it)
    },
    update: async (id, olds, news) => ({ outs: await life.update(edgeClient(), id, olds, news) }),
    delete: (id, props) => life.delete(edgeClient(), id, props),
  };
}
