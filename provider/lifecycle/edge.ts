import type { CreateOptions, EdgeClient } from "../../sdk/client";
import type { HttpsEdge, TlsEdge } from "../../sdk/contract";
import { ID_PATTERN } from "../../sdk/contract";
import { isProps } from "../model/check";
import {
  checkEdge,
  decodeEdge,
  edgeConfigOf,
  edgeCreateRequest,
  edgeInputsOf,
  edgeOutputsOf,
} from "../model/edge";
import type { EdgeInputs, EdgeOutputs } from "../model/types";
import { deleteIgnoringNotFound } from "../plan/execute";
import { planEdge } from "../plan/edge";
import { attributeDeletion, attributeDrift } from "./attribution";
import type { AuthorLabel } from "./authorship";
import { BadIdError, isConflict, readOrGone } from "./errors";
import { createOptions, heldByCreate, NOT_BY_THIS_IDENTITY, noteCreated, takeItOnPurpose } from "./held";
import { encodeChecked, type Lifecycle } from "./types";

type EdgeKind = "https" | "tls";

/** The client's calls for one kind of edge. */
function calls(client: EdgeClient, kind: EdgeKind) {
  return kind === "https"
    ? {
        create: (b: EdgeInputs, keys: CreateOptions) => client.createHttpsEdge(edgeCreateRequest(b), keys),
        get: (id: string): Promise<HttpsEdge | TlsEdge> => client.getHttpsEdge(id),
        del: (id: string) => client.deleteHttpsEdge(id),
        all: (): AsyncGenerator<HttpsEdge | TlsEdge> => client.allHttpsEdges(),
      }
    : {
        create: (b: EdgeInputs, keys: CreateOptions) => client.createTlsEdge(edgeCreateRequest(b), keys),
        get: (id: string): Promise<HttpsEdge | TlsEdge> => client.getTlsEdge(id),
        del: (id: string) => client.deleteTlsEdge(id),
        all: (): AsyncGenerator<HttpsEdge | TlsEdge> => client.allTlsEdges(),
      };
}

function edgeLifecycle(kind: EdgeKind): Lifecycle<EdgeInputs, EdgeOutputs, HttpsEdge | TlsEdge> {
  const label: AuthorLabel = kind === "https" ? "HTTPS edge" : "TLS edge";
  return {
    check: (news) => encodeChecked(checkEdge(news), news, edgeInputsOf),
    diff: (stored, news) => planEdge(decodeEdge(stored), edgeConfigOf(news)),
    async create(client, inputs, ctx) {
      let edge;
      try {
        edge = await calls(client, kind).create(edgeConfigOf(inputs), createOptions(ctx));
      } catch (e) {
        if (!isConflict(e)) throw e;
        throw await hostportTaken(client, inputs, ctx?.name, e);
      }
      noteCreated(label, edge.id, edge, ctx);
      return { id: edge.id, outs: edgeOutputsOf(edge) };
    },
    locate(id) {
      if (!ID_PATTERN.test(id))
        throw new BadIdError(
          label,
          id,
          `the ${label}'s id (e.g. ${kind === "https" ? "edghts_" : "edgtls_"}...)`,
        );
      return { edge: kind, edgeId: id };
    },
    async read(client, id, stored, ctx) {
      this.locate(id, stored);
      return this.readFound(client, id, stored, await readOrGone(() => calls(client, kind).get(id)), ctx);
    },
    async readFound(client, id, stored, edge, ctx) {
      // A refresh (state to compare with; an import has none) says who made the drift it finds.
      const refresh = isProps(stored) && Object.keys(stored).length > 0;
      const what = { label, id, objectId: id };
      if (!edge) {
        if (refresh) await attributeDeletion(client, ctx, what);
        return undefined;
      }
      if (refresh) {
        await attributeDrift(
          client,
          ctx,
          what,
          { ...decodeEdge(stored) },
          { ...decodeEdge(edgeOutputsOf(edge)) },
        );
      }
      const { uri: _uri, createdAt: _created, ...inputs } = edgeOutputsOf(edge);
      return { id, outs: edgeOutputsOf(edge), inputs };
    },
    update() {
      // planEdge replaces on every change: the engine never asks for an update.
      return Promise.reject(new Error(`${label}s cannot be updated in place; the provider replaces them`));
    },
    async delete(client, id, _stored, ctx) {
      if (heldByCreate(label, id, ctx)) return;
      await deleteIgnoringNotFound(() => calls(client, kind).del(id));
    },
  };
}

/**
 * A create refused because a hostport belongs to another edge already (a hostport is served by one
 * edge at a time: the edge's natural key): the error names that edge and how to take it.
 */
async function hostportTaken(
  client: EdgeClient,
  inputs: EdgeInputs,
  name: string | undefined,
  conflict: unknown,
): Promise<Error> {
  const wanted = new Set(inputs.hostports.map((h) => h.toLowerCase()));
  for (const kind of ["https", "tls"] as const) {
    for await (const edge of calls(client, kind).all()) {
      const shared = edge.hostports.filter((h) => wanted.has(h.toLowerCase()));
      if (shared.length === 0) continue;
      const take = {
        importType: kind === "https" ? "edge:index:HttpsEdge" : "edge:index:TlsEdge",
        importId: edge.id,
        dynamic:
          "with the dynamic resources (which cannot adopt an edge) delete it if nothing uses it and run `pulumi up` again",
      };
      return new Error(
        `${kind === "https" ? "HTTPS" : "TLS"} edge ${edge.id} already serves ${shared.join(", ")} (a hostport belongs to one edge at a time): ` +
          `${NOT_BY_THIS_IDENTITY}, ${takeItOnPurpose(take, name)}. Otherwise give this edge other hostports.`,
      );
    }
  }
  return conflict instanceof Error ? conflict : new Error(String(conflict));
}

export const httpsEdgeLifecycle = edgeLifecycle("https");
export const tlsEdgeLifecycle = edgeLifecycle("tls");
