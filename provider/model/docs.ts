/**
 * The one source of what the contract does not describe: each resource's description, and the
 * description of each property that is not a wire field of its request (the path parameter
 * `edgeId`, `adopt`, and the outputs the service assigns). The wire fields' descriptions are the
 * contract's (zod `.describe`). The packaged schema (provider/plugin/schema.ts) takes these, so
 * schema.json and every SDK do; the dynamic classes get them from that schema through the
 * generated provider/resources/args.ts and provider/resources/outputs.ts (`npm run generate`).
 */

import type { ResourceType } from "./kinds";

export type { ResourceType };

/** A resource's own text, and its properties' that are not wire fields of its request. */
export interface ResourceDocs {
  /** The resource's description: the schema's, the SDKs', and the dynamic class's Args and outputs. */
  readonly description: string;
  /** Inputs that are not wire fields (also outputs, `adopt` excepted). */
  readonly inputs: Readonly<Record<string, string>>;
  /** Outputs that are not inputs: what the service assigns. */
  readonly outputs: Readonly<Record<string, string>>;
}

const URI = (what: string) => `URI of the ${what} as an API resource.`;
const CREATED_AT = "RFC 3339 creation time.";
const EDGE_REPLACED = "The API has no update for edges: changing any input replaces the edge.";

export const RESOURCE_DOCS: Readonly<Record<ResourceType, ResourceDocs>> = {
  HttpsEdge: {
    description: `An HTTPS edge: holds routes (see HttpsEdgeRoute). ${EDGE_REPLACED}`,
    inputs: {},
    outputs: { uri: URI("edge"), createdAt: CREATED_AT },
  },
  TlsEdge: {
    description: `A TLS edge: has one IP restriction module (see TlsEdgeIpRestriction). ${EDGE_REPLACED}`,
    inputs: {},
    outputs: { uri: URI("edge"), createdAt: CREATED_AT },
  },
  HttpsEdgeRoute: {
    description:
      "A route of an HTTPS edge. A module given here is managed whole: changing any field of it replaces that module on the service (one PATCH), removing it deletes it with its own DELETE, and modules never given are left alone. Switching between oauth, oidc and saml never exposes the backend unauthenticated. Credentials (`oidc.clientSecret`, `oauth.provider.*.clientSecret`, `webhookVerification.secret`) are secret in the state and in previews whether or not the program marked them; the rest of their module stays readable. Import with the id `<edgeId>/<routeId>`.",
    inputs: {
      edgeId: "The HTTPS edge that owns the route. Changing it replaces the route.",
      adopt:
        "Adopt a route that already exists on the edge with the same matchType and match, instead of failing: it is brought to this configuration in place, not recreated.",
    },
    outputs: {
      routeId: "The route's id on the service.",
      uri: URI("route"),
      createdAt: CREATED_AT,
    },
  },
  TlsEdgeIpRestriction: {
    description:
      "The IP restriction module of a TLS edge. Create and update replace it whole (PUT); delete removes it. Its id is the TLS edge's id (import with it).",
    inputs: {
      edgeId: "The TLS edge whose IP restriction module this is. Changing it replaces the resource.",
      adopt:
        "Take over a module that already exists on the edge (its configuration is replaced by this one). Without it, creating over an existing module fails rather than overwrite it.",
    },
    outputs: {},
  },
};
