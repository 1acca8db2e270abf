/**
 * The four resource kinds and their Pulumi type names: the one map between them, read both ways.
 * A type name is how both faces register a kind (`edge:index:<name>` packaged,
 * `pulumi-nodejs:dynamic/edge:<name>` dynamic) and what its class is called. Nothing imported, so
 * that a program's resource classes can load it for the price of the table.
 */
export const TYPE_NAMES = {
  httpsEdge: "HttpsEdge",
  tlsEdge: "TlsEdge",
  httpsEdgeRoute: "HttpsEdgeRoute",
  tlsEdgeIpRestriction: "TlsEdgeIpRestriction",
} as const;

export type ResourceKind = keyof typeof TYPE_NAMES;
/** The four resource types, by their type name. */
export type ResourceType = (typeof TYPE_NAMES)[ResourceKind];

const isResourceKind = (name: string): name is ResourceKind => Object.hasOwn(TYPE_NAMES, name);
export const RESOURCE_KINDS: readonly ResourceKind[] = Object.keys(TYPE_NAMES).filter(isResourceKind);

const KIND_OF_TYPE: ReadonlyMap<string, ResourceKind> = new Map(
  RESOURCE_KINDS.map((k) => [TYPE_NAMES[k], k]),
);
/** The kind whose type name is `name` (`HttpsEdgeRoute` → `httpsEdgeRoute`), or undefined for any other name. */
export const kindOfType = (name: string): ResourceKind | undefined => KIND_OF_TYPE.get(name);
