/** HTTPS and TLS edges on the Pulumi side: the same three fields, all set at creation. */
import { edgeCreateSchema, type EdgeCreate, type HttpsEdge, type TlsEdge } from "../../sdk/contract";
import { minimize } from "./canonical";
import { fromWire, toWire } from "./case";
import { canonicalAgainst, type Checked, checkAgainst, isProps } from "./check";
import type { EdgeConfig, EdgeInputs, EdgeOutputs } from "./types";

/** The fields of an edge, in the order of the contract. */
export const EDGE_FIELDS = [
  "description",
  "metadata",
  "hostports",
] as const satisfies readonly (keyof EdgeConfig)[];

export function checkEdge(news: unknown): Checked<EdgeConfig> {
  return checkAgainst<EdgeConfig>(edgeCreateSchema, news, {});
}

/** Outputs of an edge from the edge resource. */
export function edgeOutputsOf(edge: HttpsEdge | TlsEdge): EdgeOutputs {
  return {
    description: edge.description,
    metadata: edge.metadata,
    hostports: edge.hostports,
    uri: edge.uri,
    createdAt: edge.created_at,
  };
}

/** The brain's value that stored state stands for: one conversion, one pass of the schema. */
export function decodeEdge(stored: unknown): EdgeConfig {
  const props = isProps(stored) ? stored : {};
  const fields = Object.fromEntries(EDGE_FIELDS.filter((f) => props[f] != null).map((f) => [f, props[f]]));
  return canonicalAgainst<EdgeConfig>(edgeCreateSchema, fields, {});
}

/** Canonical inputs (a check's) → the brain's value; the brain's value → Pulumi inputs. */
export const edgeConfigOf = (inputs: EdgeInputs): EdgeConfig => toWire<EdgeConfig>(inputs);
export const edgeInputsOf = (config: EdgeConfig): EdgeInputs => fromWire<EdgeInputs>(config);

/** The smallest create body with the same meaning. */
export function edgeCreateRequest(desired: EdgeConfig): EdgeCreate {
  return minimize(
    edgeCreateSchema,
    Object.fromEntries(EDGE_FIELDS.map((f) => [f, desired[f]])),
  ) as EdgeCreate;
}
