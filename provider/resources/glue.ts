/**
 * The dynamic providers that Pulumi serializes into every resource's state (`__provider`).
 * Each method only loads this package by name and delegates, so the state carries a few
 * hundred bytes of glue rather than the project's code, and state written from one checkout
 * refreshes and destroys from another. Nothing is captured but the provider's kind.
 * (The `as Runtime` casts are types only: the serialized JavaScript is a bare require.)
 */
import type * as dynamic from "@pulumi/pulumi/dynamic";
import type { Inputs, Outputs } from "../model";
import type { ProviderKind } from "../runtime";

type Runtime = typeof import("../runtime");

function glue<K extends ProviderKind>(kind: K): dynamic.ResourceProvider<Inputs<K>, Outputs<K>> {
  return {
    configure(req) {
      return (require("pulumi-edge/runtime") as Runtime).configure(req);
    },
    check(olds, news) {
      return (require("pulumi-edge/runtime") as Runtime).providers[kind].check!(olds, news);
    },
    diff(id, olds, news) {
      return (require("pulumi-edge/runtime") as Runtime).providers[kind].diff!(id, olds, news);
    },
    create(inputs) {
      return (require("pulumi-edge/runtime") as Runtime).providers[kind].create(inputs);
    },
    read(id, props) {
      return (require("pulumi-edge/runtime") as Runtime).providers[kind].read!(id, props);
    },
    update(id, olds, news) {
      return (require("pulumi-edge/runtime") as Runtime).providers[kind].update!(id, olds, news);
    },
    delete(id, props) {
      return (require("pulumi-edge/runtime") as Runtime).providers[kind].delete!(id, props);
    },
  };
}

/** One instance per kind: Pulumi caches each provider's serialized form per object. */
export const glueProviders: { [K in ProviderKind]: dynamic.ResourceProvider<Inputs<K>, Outputs<K>> } = {
  httpsEdge: glue("httpsEdge"),
  tlsEdge: glue("tlsEdge"),
  httpsEdgeRoute: glue("httpsEdgeRoute"),
  tlsEdgeIpRestriction: glue("tlsEdgeIpRestriction"),
};
