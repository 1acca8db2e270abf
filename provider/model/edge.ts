/** HTTPS and TLS edges on the Pulumi side: the same three fields, all set at creation. */
import { edgeCreateSchema, type EdgeCreate, type HttpsEdge, type TlsEdge } from "../../sdk/contract";
import { minimize } from "./canonical";
import { toWire } from "./case";
import { canonicalAgainst, type Checked, checkAgainst, isProps, type Props } from "./check";
import type { EdgeInputs, EdgeOutputs } from "./types";

/** The fields of an edge, in the order of the contract. */
export const EDGE_FIELDS = [
  "description",
  "metadata",
  "hostports",
] as const satisfies readonly (keyof EdgeInputs)[];

export function checkEdge(news: unknown): Checked<EdgeInputs> {
  return checkAgainst<EdgeInputs>(edgeCreateSchema, news, {});
}

export function edgeFromResponse(edge: HttpsEdge | TlsEdge): EdgeOutputs {
  return {
    description: edge.description,
    metadata: edge.metadata,
    hostports: edge.hostports,
    uri: edge.uri,
    createdAt: edge.created_at,
  };
}

/** The canonical inputs that stored state stands for. */
export function edgeCanonical(stored: unknown): EdgeInputs {
  const props: Props = isProps(stored) ? stored : {};
  const fields = Object.fromEntries(EDGE_FIELDS.filter((f) => props[f] != null).map((f) => [f, props[f]]));
  return canonicalAgainst<EdgeInputs>(edgeCreateSchema, fields, {});
}

/** The smallest create body with the same meaning. */
export function edgeCreateRequest(desired: EdgeInputs): EdgeCreate {
  const fields = Object.fromEntries(EDGE_FIELDS.map((f) => [f, desired[f]]));
  return minimize(edgeCreateSchema, toWire(fields)) as EdgeCreate;
}
