/**
 * The engine floor: resources of the same shape as HttpsEdge and HttpsEdgeRoute (same input
 * and output property names, same secret-output options), served by a dynamic provider that
 * does nothing. create echoes its inputs, diff answers "no changes", check returns the inputs.
 *
 * The provider is built like pulumi-edge's serialized glue (one object per kind, the same
 * seven methods, the kind captured), so that Pulumi serializes a provider of comparable size
 * into every resource's state and the floor pays the same serialization and checkpoint costs.
 * What remains between the floor and pulumi-edge is the provider's own work: loading the
 * package, validating, planning and calling the embedded service.
 */
import * as pulumi from "@pulumi/pulumi";

type Kind = "httpsEdge" | "httpsEdgeRoute";

function floorGlue(kind: Kind): pulumi.dynamic.ResourceProvider {
  return {
    async configure(_req) {
      return undefined;
    },
    async check(_olds, news) {
      return { inputs: news };
    },
    async diff(_id, _olds, _news) {
      return { changes: false, replaces: [], deleteBeforeReplace: false };
    },
    async create(inputs) {
      const id = `${kind === "httpsEdge" ? "edghts" : "edghtsrt"}_${require("node:crypto").randomUUID().replace(/-/g, "")}`;
      const uri = `http://edge-service.embedded/edges/https/${id}`;
      return { id, outs: { ...inputs, uri, createdAt: new Date().toISOString(), routeId: id } };
    },
    async read(id, props) {
      return { id, props, inputs: props };
    },
    async update(_id, _olds, news) {
      return { outs: news };
    },
    async delete(_id, _props) {
      return undefined;
    },
  };
}

const providers: Record<Kind, pulumi.dynamic.ResourceProvider> = {
  httpsEdge: floorGlue("httpsEdge"),
  httpsEdgeRoute: floorGlue("httpsEdgeRoute"),
};

const MODULES = [
  "backend",
  "ipRestriction",
  "circuitBreaker",
  "compression",
  "requestHeaders",
  "responseHeaders",
  "webhookVerification",
  "oauth",
  "saml",
  "oidc",
  "websocketTcpConverter",
  "userAgentFilter",
  "trafficPolicy",
];
const SECRET_MODULES = ["webhookVerification", "oauth", "oidc"];

export class FloorHttpsEdge extends pulumi.dynamic.Resource {
  constructor(name: string, args: Record<string, unknown>, opts?: pulumi.CustomResourceOptions) {
    const props = { description: undefined, metadata: undefined, hostports: undefined, ...args };
    super(
      providers.httpsEdge,
      name,
      { ...props, uri: undefined, createdAt: undefined },
      opts,
      "edge",
      "HttpsEdge",
    );
  }
}

export class FloorHttpsEdgeRoute extends pulumi.dynamic.Resource {
  constructor(name: string, args: Record<string, unknown>, opts?: pulumi.CustomResourceOptions) {
    const props: Record<string, unknown> = { description: undefined, metadata: undefined };
    for (const m of MODULES) props[m] = undefined;
    Object.assign(props, args, { uri: undefined, createdAt: undefined, routeId: undefined });
    super(
      providers.httpsEdgeRoute,
      name,
      props,
      { ...opts, additionalSecretOutputs: [...(opts?.additionalSecretOutputs ?? []), ...SECRET_MODULES] },
      "edge",
      "HttpsEdgeRoute",
    );
  }
}
