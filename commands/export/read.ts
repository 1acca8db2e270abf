/** Reads a fleet from the edge service through the typed client: every edge, or those named by id. */
import { type EdgeClient, EdgeApiError } from "../../sdk/client";
import type { HttpsEdge, TlsEdge } from "../../sdk/contract";
import type { Fleet } from "./fleet";

const notFound = (e: unknown) => e instanceof EdgeApiError && e.isNotFound;

/** An edge by id, HTTPS or TLS (told by its prefix, else by asking for both). */
async function edgeById(client: EdgeClient, id: string): Promise<HttpsEdge | { tls: TlsEdge }> {
  const tls = () => client.getTlsEdge(id).then((edge) => ({ tls: edge }));
  if (id.startsWith("edgtls_")) return tls();
  try {
    return await client.getHttpsEdge(id);
  } catch (e) {
    if (!notFound(e) || id.startsWith("edghts_")) throw e;
    return tls();
  }
}

/** The fleet: every HTTPS and TLS edge of the service, or the edges `ids` name (each must exist). */
export async function readFleet(client: EdgeClient, ids: readonly string[] = []): Promise<Fleet> {
  const fleet: Fleet = { https: [], tls: [] };
  if (ids.length === 0) {
    for await (const edge of client.allHttpsEdges()) fleet.https.push(edge);
    for await (const edge of client.allTlsEdges()) fleet.tls.push(edge);
    return fleet;
  }
  for (const id of new Set(ids)) {
    try {
      const edge = await edgeById(client, id);
      if ("tls" in edge) fleet.tls.push(edge.tls);
      else fleet.https.push(edge);
    } catch (e) {
      if (notFound(e)) throw new Error(`there is no HTTPS or TLS edge with the id "${id}" on the service`);
      throw e;
    }
  }
  return fleet;
}
