/**
 * The dynamic providers that Pulumi serializes into every resource's state (`__provider`).
 * Each method only loads this package by name and delegates, so the state carries a few
 * hundred bytes of glue rather than the project's code, and state written from one checkout
 * refreshes and destroys from another. Nothing is captured but the provider's kind.
 */
import type * as dynamic from "@pulumi/pulumi/dynamic";
import type { ProviderKind } from "../runtime";

function glue(kind: ProviderKind): dynamic.ResourceProvider {
  return {
    async configure(req) {
      return require("pulumi-edge/runtime").configure(req);
    },
    async check(olds, news) {
      return require("pulumi-edge/runtime").providers[kind].check(olds, news);
    },
    async diff(id, olds, news) {
      return require("pulumi-edge/runtime").providers[kind].diff(id, olds, news);
    },
    async create(inputs) {
      return require("pulumi-edge/runtime").providers[kind].create(inputs);
    },
    async read(id, props) {
      return require("pulumi-edge/runtime").providers[kind].read(id, props);
    },
    async update(id, olds, news) {
      return require("pulumi-edge/runtime").providers[kind].update(id, olds, news);
    },
    async delete(id, props) {
      return require("pulumi-edge/runtime").providers[kind].delete(id, props);
    },
  };
}

/** One instance per kind: Pulumi caches each provider's serialized form per object. */
export const glueProviders: Record<ProviderKind, dynamic.ResourceProvider> = {
  httpsEdge: glue("httpsEdge"),
  tlsEdge: glue("tlsEdge"),
  httpsEdgeRoute: glue("httpsEdgeRoute"),
  tlsEdgeIpRestriction: glue("tlsEdgeIpRestriction"),
};
