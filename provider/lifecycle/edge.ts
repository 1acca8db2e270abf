import { type CreateOptions, EdgeApiError, type EdgeClient } from "../../sdk/client";
import type { HttpsEdge, TlsEdge } from "../../sdk/contract";
import { canonicalHostport, ID_PATTERN } from "../../sdk/contract";
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
import { createOptions, heldByCreate, notByThisIdentity, noteCreated, takeItOnPurpose } from "./held";
import type { Blocked } from "./releases";
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
      const create = () => calls(client, kind).create(edgeConfigOf(inputs), createOptions(ctx));
      let edge;
      try {
        edge = await create();
      } catch (e) {
        if (!isConflict(e)) throw e;
        const holder = await hostportHolder(client, inputs, e);
        if (holder) {
          // The holder may be an edge of this run that gives the hostport up (./releases).
          const wait = (await ctx?.releases?.awaitRelease(holder.edge.id)) ?? "not-leaving";
          if (wait !== "released") throw hostportTaken(holder, wait, ctx?.name);
        }
        // Released, or gone since the 409 (deleted meanwhile): once more.
        try {
          edge = await create();
        } catch (again) {
          if (!isConflict(again)) throw again;
          const still = await hostportHolder(client, inputs, again);
          if (!still) throw again;
          throw hostportTaken(
            still,
            still.edge.id === holder?.edge.id ? "still-held" : "not-leaving",
            ctx?.name,
          );
        }
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
      try {
        if (heldByCreate(label, id, ctx)) return;
        await deleteIgnoringNotFound(() => calls(client, kind).del(id));
      } finally {
        ctx?.releases?.settle(id);
      }
    },
  };
}

/** The edge that holds one of the hostports a create was refused for, and which of them. */
interface HostportHolder {
  kind: EdgeKind;
  edge: HttpsEdge | TlsEdge;
  shared: string[];
}

/**
 * The edge the service named in its 409 (`details.object_id`); an older service names none, and
 * the edges are then searched for one serving a wanted hostport.
 */
async function hostportHolder(
  client: EdgeClient,
  inputs: EdgeInputs,
  conflict: unknown,
): Promise<HostportHolder | undefined> {
  const wanted = new Set(inputs.hostports.map(canonicalHostport));
  const holding = (kind: EdgeKind, edge: HttpsEdge | TlsEdge): HostportHolder | undefined => {
    const shared = edge.hostports.filter((h) => wanted.has(canonicalHostport(h)));
    return shared.length > 0 ? { kind, edge, shared } : undefined;
  };
  const named = conflict instanceof EdgeApiError ? conflict.objectId : undefined;
  if (named !== undefined) {
    const kind: EdgeKind = named.startsWith("edgtls_") ? "tls" : "https";
    const edge = await readOrGone(() => calls(client, kind).get(named));
    if (edge) return holding(kind, edge);
  }
  for (const kind of ["https", "tls"] as const) {
    for await (const edge of calls(client, kind).all()) {
      const found = holding(kind, edge);
      if (found) return found;
    }
  }
  return undefined;
}

/**
 * A create refused because a hostport belongs to another edge already (a hostport is served by one
 * edge at a time: the edge's natural key). What the provider knows, and only that: whether this
 * run gives that edge up (`wait`). Whether the stack's state holds the edge it cannot know, so the
 * error says how to tell, and gives the advice that fits each answer: never one that deletes what
 * the state points at.
 */
function hostportTaken(holder: HostportHolder, wait: Blocked, name: string | undefined): Error {
  const { kind, edge, shared } = holder;
  const what = `${kind === "https" ? "HTTPS" : "TLS"} edge ${edge.id} already serves ${shared.join(", ")} (a hostport belongs to one edge at a time)`;
  if (wait === "still-held") {
    return new Error(
      `${what}. This update replaces that edge, which gives the hostport up, but its delete failed (its own error says why): ` +
        `nothing was created. Once that is resolved, run \`pulumi up\` again.`,
    );
  }
  if (wait === "timed-out") {
    return new Error(
      `${what}. This update replaces that edge, which gives the hostport up, but its delete did not end in time (edge:requestDeadlineMs): ` +
        `nothing was created. Run \`pulumi up\` again.`,
    );
  }
  const take = {
    importType: kind === "https" ? "edge:index:HttpsEdge" : "edge:index:TlsEdge",
    importId: edge.id,
    dynamic:
      "with the dynamic resources (which cannot adopt an edge) delete it if nothing uses it, and run `pulumi up` again",
  };
  return new Error(
    `${what}, and this update does not give it up before this create. Nothing was created. ` +
      `${notByThisIdentity({ name: edge.id, grep: edge.id }, "this hostport")}, ${takeItOnPurpose(take, name)}. Otherwise give this edge other hostports.`,
  );
}

export const httpsEdgeLifecycle = edgeLifecycle("https");
export const tlsEdgeLifecycle = edgeLifecycle("tls");
