/**
 * ResourceProviders of HttpsEdge and TlsEdge. The API has no update operation for edges, so
 * every change replaces the edge (its routes or module follow, since they name its id).
 */
import type * as dynamic from "@pulumi/pulumi/dynamic";
import { edgeCreateSchema, type HttpsEdge, type TlsEdge } from "../../sdk/contract";
import { edgeClient } from "../config";
import { deepEqual } from "../model/canonical";
import { checkAgainst } from "../model/check";
import { containsUnknown } from "../model/unknown";
import { deleteIgnoringNotFound, gone, readOrGone } from "./errors";

type Props = Record<string, any>;
type Kind = "https" | "tls";
const FIELDS = ["description", "metadata", "hostports"] as const;

const outputs = (e: HttpsEdge | TlsEdge) => ({
  description: e.description,
  metadata: e.metadata,
  hostports: e.hostports,
  uri: e.uri,
  createdAt: e.created_at,
});
const inputsOf = (p: Props) => ({
  description: p.description ?? "",
  metadata: p.metadata ?? "",
  hostports: p.hostports ?? [],
});

function edgeProvider(kind: Kind): dynamic.ResourceProvider {
  type Api = {
    create(body: Props): Promise<HttpsEdge | TlsEdge>;
    get(id: string): Promise<HttpsEdge | TlsEdge>;
    del(id: string): Promise<void>;
  };
  const api = (): Api => {
    const c = edgeClient();
    return kind === "https"
      ? { create: c.createHttpsEdge.bind(c), get: c.getHttpsEdge.bind(c), del: c.deleteHttpsEdge.bind(c) }
      : { create: c.createTlsEdge.bind(c), get: c.getTlsEdge.bind(c), del: c.deleteTlsEdge.bind(c) };
  };
  return {
    async check(_olds: Props, news: Props) {
      return checkAgainst(edgeCreateSchema, news, {});
    },
    async diff(_id: string, olds: Props, news: Props) {
      const replaces = FIELDS.filter(
        (f) => containsUnknown(news[f]) || !deepEqual(inputsOf(olds)[f], inputsOf(news)[f]),
      );
      return { changes: replaces.length > 0, replaces: [...replaces], deleteBeforeReplace: false };
    },
    async create(inputs: Props) {
      const edge = await api().create(inputsOf(inputs));
      return { id: edge.id, outs: outputs(edge) };
    },
    async read(id: string) {
      const edge = await readOrGone(() => api().get(id));
      if (!edge) return gone();
      const outs = outputs(edge);
      return { id, props: outs, inputs: inputsOf(outs) };
    },
    async update(): Promise<never> {
      throw new Error(`${kind.toUpperCase()} edges cannot be updated in place; the provider replaces them`);
    },
    async delete(id: string) {
      await deleteIgnoringNotFound(() => api().del(id));
    },
  };
}

export const httpsEdgeProvider = edgeProvider("https");
export const tlsEdgeProvider = edgeProvider("tls");
