/**
 * A fleet of edges as the service holds them → what adopts it into Pulumi: the declarative
 * edges.yaml (the inputs as a person writes them, secrets as `!secret` references) and the file
 * `pulumi import --file` takes, in the names `deployEdgeConfig` gives the resources. Pure.
 */
import YAML from "yaml";
import {
  type HttpsEdge,
  mapPaths,
  type Route,
  type TlsEdge,
  type TlsIpRestriction,
} from "../../sdk/contract";
import { SecretRef, secretTag } from "../../provider/declarative/load";
import { isProps, type Props } from "../../provider/model/check";
import { edgeInputsOf } from "../../provider/model/edge";
import { ROUTE_SECRET_LEAVES } from "../../provider/model/leaves";
import { routeConfigOfResponse, routeInputsOf } from "../../provider/model/route";
import { tlsIpRestrictionOutputsOf } from "../../provider/model/tls-ip-restriction";
import { writtenInputs } from "../../provider/model/written";
import { byAge, edgeBaseName, Identifiers, routeBaseName, uniqueNames } from "./names";

export interface Fleet {
  https: HttpsEdge[];
  tls: TlsEdge[];
}

/** Which edges to export: all, or those whose description / metadata match. */
export interface FleetFilter {
  descriptionMatch?: RegExp;
  metadataMatch?: RegExp;
}

export function filterFleet(fleet: Fleet, filter: FleetFilter): Fleet {
  const keep = (e: { description: string; metadata: string }) =>
    (!filter.descriptionMatch || filter.descriptionMatch.test(e.description)) &&
    (!filter.metadataMatch || filter.metadataMatch.test(e.metadata));
  return { https: fleet.https.filter(keep), tls: fleet.tls.filter(keep) };
}

/** One entry of `pulumi import --file` (engine 3.259.0): `name` names the generated code's variable. */
export interface ImportEntry {
  type: string;
  /** The code name (an identifier), unique in the file. */
  name: string;
  /** The resource's name in the program: the entry name `deployEdgeConfig` gives it. */
  logicalName: string;
  id: string;
  /** The plugin version the program's SDK asks for, so the import's default provider is the program's. */
  version: string;
}

/** A secret of the fleet, referenced from edges.yaml as `!secret <key>`: its value goes to the stack's config. */
export interface SecretSlot {
  /** The config key (`pulumi config set --secret <key>`). */
  key: string;
  /** Where it is: `httpsEdges.web.routes.hooks.webhookVerification.secret`. */
  where: string;
  value: string;
}

export interface EdgesDocument {
  httpsEdges?: Record<string, Props & { routes?: Record<string, Props> }>;
  tlsEdges?: Record<string, Props & { ipRestriction?: Props }>;
}

export interface Exported {
  document: EdgesDocument;
  /** edges.yaml's text. */
  yaml: string;
  imports: ImportEntry[];
  secrets: SecretSlot[];
  counts: { httpsEdges: number; routes: number; tlsEdges: number; ipRestrictions: number };
}

const TYPE = (name: string) => `edge:index:${name}`;

/**
 * One object of a fleet as `pulumi import` takes it: its type, the name `deployEdgeConfig` gives
 * it (an edge's entry name, a route's under its edge's), and the id the packaged provider reads it
 * by (a route's `<edgeId>/<routeId>`; a TLS IP restriction's, its edge's).
 */
export type FleetObject =
  | { type: "HttpsEdge"; logical: [string]; id: string; edge: HttpsEdge }
  | { type: "HttpsEdgeRoute"; logical: [string, string]; id: string; edge: HttpsEdge; route: Route }
  | { type: "TlsEdge"; logical: [string]; id: string; edge: TlsEdge }
  | {
      type: "TlsEdgeIpRestriction";
      logical: [string, "ipRestriction"];
      id: string;
      edge: TlsEdge;
      module: TlsIpRestriction;
    };

/**
 * Every object of the fleet, named: each edge followed by its routes (or its IP restriction),
 * HTTPS edges first, oldest first (names are handed out in that order, so they are stable).
 */
export function fleetObjects(fleet: Fleet): FleetObject[] {
  const out: FleetObject[] = [];
  for (const [edge, name] of uniqueNames(byAge(fleet.https), edgeBaseName)) {
    out.push({ type: "HttpsEdge", logical: [name], id: edge.id, edge });
    for (const [route, routeName] of uniqueNames(byAge(edge.routes), routeBaseName))
      out.push({
        type: "HttpsEdgeRoute",
        logical: [name, routeName],
        id: `${edge.id}/${route.id}`,
        edge,
        route,
      });
  }
  for (const [edge, name] of uniqueNames(byAge(fleet.tls), edgeBaseName)) {
    out.push({ type: "TlsEdge", logical: [name], id: edge.id, edge });
    if (edge.ip_restriction) {
      const module = edge.ip_restriction;
      out.push({ type: "TlsEdgeIpRestriction", logical: [name, "ipRestriction"], id: edge.id, edge, module });
    }
  }
  return out;
}

/** The fleet in edges.yaml's form and the import file's; secrets referenced, their values set apart. */
export function exportFleet(fleet: Fleet, opts: { version: string; header?: string[] }): Exported {
  const codeNames = new Identifiers();
  const secretKeys = new Identifiers();
  const imports: ImportEntry[] = [];
  const secrets: SecretSlot[] = [];
  const counts = { httpsEdges: 0, routes: 0, tlsEdges: 0, ipRestrictions: 0 };
  const edgeFields = (edge: HttpsEdge | TlsEdge): Props =>
    writtenInputs(
      "httpsEdge",
      edgeInputsOf({ description: edge.description, metadata: edge.metadata, hostports: edge.hostports }),
    );

  const document: EdgesDocument = {};
  // fleetObjects gives an edge before its routes or module: they go into its entry.
  let https: Props & { routes?: Record<string, Props> } = {};
  let tls: Props & { ipRestriction?: Props } = {};
  for (const o of fleetObjects(fleet)) {
    imports.push({
      type: TYPE(o.type),
      name: codeNames.take(o.logical),
      logicalName: o.logical.join("."),
      id: o.id,
      version: opts.version,
    });
    const [name] = o.logical;
    if (o.type === "HttpsEdge") {
      counts.httpsEdges++;
      https = edgeFields(o.edge);
      (document.httpsEdges ??= {})[name] = https;
    } else if (o.type === "HttpsEdgeRoute") {
      counts.routes++;
      const routeName = o.logical[1];
      (https.routes ??= {})[routeName] = routeEntry(o.route, (path, value) => {
        // webHooksWebhookSecret, webLoginOauthGithubClientSecret, webDashOidcClientSecret
        const label = path
          .filter((p) => p !== "provider")
          .map((p) => (p === "webhookVerification" ? "webhook" : p));
        const key = secretKeys.take([name, routeName, ...label]);
        secrets.push({ key, where: ["httpsEdges", name, "routes", routeName, ...path].join("."), value });
        return new SecretRef(key);
      });
    } else if (o.type === "TlsEdge") {
      counts.tlsEdges++;
      tls = edgeFields(o.edge);
      (document.tlsEdges ??= {})[name] = tls;
    } else {
      counts.ipRestrictions++;
      const { edgeId: _edge, ...module } = writtenInputs(
        "tlsEdgeIpRestriction",
        tlsIpRestrictionOutputsOf(o.edge.id, o.module),
      );
      tls.ipRestriction = module;
    }
  }

  const doc = new YAML.Document(document, { customTags: [secretTag] });
  const header = [
    ...(opts.header ?? []),
    ...(secrets.length > 0
      ? ["`!secret <key>` is the stack's secret config <key> (pulumi config set --secret <key>)."]
      : []),
  ];
  if (header.length > 0) doc.commentBefore = header.map((l) => ` ${l}`).join("\n");
  return { document, yaml: doc.toString({ lineWidth: 0 }), imports, secrets, counts };
}

/** A route's entry: its inputs as written, without `edgeId` (the file nests routes in their edge). */
function routeEntry(route: Route, secret: (path: string[], value: string) => SecretRef): Props {
  const { edgeId: _edge, ...written } = writtenInputs(
    "httpsEdgeRoute",
    routeInputsOf(routeConfigOfResponse(route)),
  );
  const out = mapPaths(written, ROUTE_SECRET_LEAVES, (leaf, at) =>
    typeof leaf === "string" && leaf !== "" ? secret([...at], leaf) : leaf,
  );
  return isProps(out) ? out : {};
}
