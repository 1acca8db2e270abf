/**
 * The Pulumi package schema of the packaged `edge` provider, generated from the zod contract
 * (zod 4's own JSON Schema of the request shapes, input side) and the model (camelCase names,
 * secret leaves, outputs; the resources' descriptions and those of the properties that are not
 * wire fields: ../model/docs). The SDKs of every language are generated from it, so their types,
 * docs and enums are the contract's. `npm run schema` writes provider/plugin/schema.json; a test
 * fails when that file is stale.
 */
import { z } from "zod";
import {
  edgeCreateSchema,
  MATCH_TYPES,
  NAMEID_FORMATS,
  isRouteModuleName,
  ROUTE_MODULES,
  type RouteModuleName,
  routeCreateSchema,
  samlComputedSchema,
  tlsIpRestrictionMutateSchema,
} from "../../sdk/contract";
import { toCamel } from "../model/case";
import { RESOURCE_DOCS, type ResourceType } from "../model/docs";
import { leafRelation, ROUTE_SECRET_LEAVES } from "../model/leaves";

export const PACKAGE = "edge";
const TOKEN = (name: string) => `${PACKAGE}:index:${name}`;
const REF = (name: string) => `#/types/${TOKEN(name)}`;

/** A Pulumi schema property or type specification (the subset this package uses). */
export interface PropertySpec {
  type?: "string" | "integer" | "number" | "boolean" | "array" | "object";
  $ref?: string;
  items?: PropertySpec;
  additionalProperties?: PropertySpec;
  description?: string;
  secret?: boolean;
  replaceOnChanges?: boolean;
  willReplaceOnChanges?: boolean;
}
export interface ObjectTypeSpec {
  type: "object";
  description?: string;
  properties: Record<string, PropertySpec>;
  required?: string[];
}
export interface EnumTypeSpec {
  type: "string";
  description?: string;
  enum: { name?: string; value: string; description?: string }[];
}
export interface ResourceSpec {
  description: string;
  inputProperties: Record<string, PropertySpec>;
  requiredInputs: string[];
  properties: Record<string, PropertySpec>;
  required: string[];
}
export interface PackageSchema {
  name: string;
  displayName: string;
  version: string;
  description: string;
  keywords: string[];
  license: string;
  repository?: string;
  pluginDownloadURL?: string;
  meta: { moduleFormat: string };
  config: { variables: Record<string, PropertySpec> };
  provider: { description: string; inputProperties: Record<string, PropertySpec> };
  types: Record<string, ObjectTypeSpec | EnumTypeSpec>;
  resources: Record<string, ResourceSpec>;
  language: Record<string, Record<string, unknown>>;
}

type JsonSchema = {
  type?: string | string[];
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  additionalProperties?: JsonSchema | boolean;
  anyOf?: JsonSchema[];
  enum?: unknown[];
};

const jsonSchema = (schema: z.ZodType, io: "input" | "output" = "input") =>
  z.toJSONSchema(schema, { io, unrepresentable: "any" }) as JsonSchema;

/** Object types by wire path, named for the SDKs. Identical shapes share one name (the 7 OAuth slots). */
const OBJECT_NAMES: Record<string, string> = {
  "oauth.provider": "RouteOAuthProvider",
  "oauth.provider.github": "RouteOAuthGithub",
  "oauth.provider.*": "RouteOAuthIdentityProvider",
};
const ENUMS: Record<string, { name: string; values: readonly string[]; description: string }> = {
  match_type: {
    name: "MatchType",
    values: MATCH_TYPES,
    description: "How a route's `match` selects requests.",
  },
  "saml.nameid_format": {
    name: "SamlNameIdFormat",
    values: NAMEID_FORMATS,
    description: "The SAML 2.0/1.1 name identifier formats the service supports.",
  },
};
const pascal = (wire: string) => toCamel(wire).replace(/^./, (c) => c.toUpperCase());
const enumMemberName = (value: string) =>
  value.includes(":") ? pascal(value.split(":").pop()!) : pascal(value);

/**
 * A route's secret leaves (`oidc.client_secret`) are `secret` in their object types. Pulumi's code
 * generators act on `secret` of a resource's own properties only (additionalSecretOutputs), so
 * this documents them; the plugin keeps them secret (provider.ts), whichever SDK sent them.
 */
const isSecretLeaf = (wirePath: string) =>
  leafRelation(wirePath.split(".").map(toCamel), ROUTE_SECRET_LEAVES).secret;

class Builder {
  readonly types: Record<string, ObjectTypeSpec | EnumTypeSpec> = {};

  /** A JSON Schema (wire names) → a Pulumi property (camelCase), naming the objects it holds. */
  property(js: JsonSchema, path: string, name: () => string): PropertySpec {
    const nonNull = js.anyOf?.filter((s) => s.type !== "null");
    if (nonNull && nonNull.length === 1) {
      // Nullable: null means "not configured", the same as absent. The outer text describes the
      // property, the inner one its type.
      const inner = this.property(nonNull[0]!, path, name);
      return { ...inner, description: js.description ?? inner.description };
    }
    const description = js.description;
    const enumSpec = ENUMS[path];
    if (enumSpec) {
      this.types[TOKEN(enumSpec.name)] = {
        type: "string",
        description: enumSpec.description,
        enum: enumSpec.values.map((value) => ({ name: enumMemberName(value), value })),
      };
      return { $ref: REF(enumSpec.name), description };
    }
    switch (js.type) {
      case "string":
      case "integer":
      case "number":
      case "boolean":
        return { type: js.type, description };
      case "array":
        return { type: "array", items: this.property(js.items ?? {}, `${path}[]`, name), description };
      case "object":
        if (!js.properties) {
          const values = typeof js.additionalProperties === "object" ? js.additionalProperties : {};
          return {
            type: "object",
            additionalProperties: this.property(values, `${path}{}`, name),
            description,
          };
        }
        return { $ref: REF(this.object(js, path, name())), description };
      default:
        throw new Error(`schema: no Pulumi type for ${JSON.stringify(js).slice(0, 200)} at ${path}`);
    }
  }

  /** Registers a named object type; returns its name. */
  object(js: JsonSchema, path: string, name: string, extra: Record<string, PropertySpec> = {}): string {
    const properties: Record<string, PropertySpec> = {};
    for (const [key, value] of Object.entries(js.properties ?? {})) {
      const sub = `${path}.${key}`;
      properties[toCamel(key)] = {
        ...this.property(value, sub, () => this.nameOf(sub, `${name}${pascal(key)}`)),
        ...(isSecretLeaf(sub) ? { secret: true } : {}),
      };
    }
    Object.assign(properties, extra);
    const spec: ObjectTypeSpec = {
      type: "object",
      ...(js.description ? { description: js.description } : {}),
      properties,
      required: (js.required ?? []).map(toCamel).sort(),
    };
    if (spec.required!.length === 0) delete spec.required;
    const existing = this.types[TOKEN(name)];
    if (
      existing &&
      JSON.stringify(existing.type === "object" ? existing.properties : {}) !== JSON.stringify(properties)
    ) {
      throw new Error(`schema: two different shapes named ${name}`);
    }
    this.types[TOKEN(name)] = spec;
    return name;
  }

  private nameOf(path: string, fallback: string): string {
    const wildcard = path.replace(/^oauth\.provider\.(?!github$)\w+$/, "oauth.provider.*");
    return OBJECT_NAMES[path] ?? OBJECT_NAMES[wildcard] ?? fallback;
  }
}

const moduleTypeName = (m: RouteModuleName) => `Route${pascal(m).replace(/^Oauth/, "OAuth")}`;
/** A property that is not a wire field: its text is the resource's (../model/docs). */
const doc = (type: ResourceType, where: "inputs" | "outputs", name: string): string => {
  const text = RESOURCE_DOCS[type][where][name];
  if (!text) throw new Error(`schema: ${type}.${name} has no description in provider/model/docs.ts`);
  return text;
};

/** The outputs a resource has beyond its inputs: the service's, all strings. */
const assigned = (type: ResourceType): Record<string, PropertySpec> =>
  Object.fromEntries(
    Object.entries(RESOURCE_DOCS[type].outputs).map(([k, description]) => [
      k,
      { type: "string", description },
    ]),
  );

function edgeResource(b: Builder, type: "HttpsEdge" | "TlsEdge"): ResourceSpec {
  const inputs: Record<string, PropertySpec> = {};
  for (const [key, value] of Object.entries(jsonSchema(edgeCreateSchema).properties ?? {})) {
    inputs[toCamel(key)] = {
      ...b.property(value, `edge.${key}`, () => "Unused"),
      replaceOnChanges: true,
    };
  }
  return {
    description: RESOURCE_DOCS[type].description,
    inputProperties: inputs,
    requiredInputs: [],
    properties: { ...strip(inputs), ...assigned(type) },
    required: [...Object.keys(inputs), ...Object.keys(assigned(type))].sort(),
  };
}

/** Output properties: the inputs' types without input-only markers. */
function strip(props: Record<string, PropertySpec>): Record<string, PropertySpec> {
  return Object.fromEntries(
    Object.entries(props).map(([k, { replaceOnChanges: _r, willReplaceOnChanges: _w, ...spec }]) => [
      k,
      spec,
    ]),
  );
}

function routeResource(b: Builder): ResourceSpec {
  const js = jsonSchema(routeCreateSchema);
  const inputs: Record<string, PropertySpec> = {
    edgeId: {
      type: "string",
      description: doc("HttpsEdgeRoute", "inputs", "edgeId"),
      replaceOnChanges: true,
    },
  };
  for (const [key, value] of Object.entries(js.properties ?? {})) {
    const prop = toCamel(key);
    if (isRouteModuleName(key)) {
      const m = key;
      inputs[prop] = b.property(value, m, () => moduleTypeName(m));
    } else inputs[prop] = b.property(value, key, () => `Route${pascal(key)}`);
  }
  inputs.adopt = { type: "boolean", description: doc("HttpsEdgeRoute", "inputs", "adopt") };
  // SAML reads back with what the service computes: its own output type.
  const samlState = b.object(
    jsonSchema(ROUTE_MODULES.saml.request),
    "saml",
    "RouteSamlState",
    Object.fromEntries(
      Object.entries(jsonSchema(samlComputedSchema, "output").properties ?? {}).map(([k, v]) => [
        toCamel(k),
        { type: "string", description: v.description },
      ]),
    ),
  );
  const { adopt: _adopt, ...outputs } = strip(inputs);
  outputs.saml = { $ref: REF(samlState), description: inputs.saml!.description };
  return {
    description: RESOURCE_DOCS.HttpsEdgeRoute.description,
    inputProperties: inputs,
    requiredInputs: ["edgeId", ...(js.required ?? []).map(toCamel)].sort(),
    properties: { ...outputs, ...assigned("HttpsEdgeRoute") },
    required: ["createdAt", "description", "edgeId", "match", "matchType", "metadata", "routeId", "uri"],
  };
}

function tlsIpRestrictionResource(b: Builder): ResourceSpec {
  const js = jsonSchema(tlsIpRestrictionMutateSchema);
  const inputs: Record<string, PropertySpec> = {
    edgeId: {
      type: "string",
      description: doc("TlsEdgeIpRestriction", "inputs", "edgeId"),
      replaceOnChanges: true,
    },
  };
  for (const [key, value] of Object.entries(js.properties ?? {})) {
    inputs[toCamel(key)] = b.property(value, `tls_ip_restriction.${key}`, () => "Unused");
  }
  inputs.adopt = { type: "boolean", description: doc("TlsEdgeIpRestriction", "inputs", "adopt") };
  const { adopt: _adopt, ...outputs } = strip(inputs);
  return {
    description: RESOURCE_DOCS.TlsEdgeIpRestriction.description,
    inputProperties: inputs,
    requiredInputs: ["edgeId", ...(js.required ?? []).map(toCamel)].sort(),
    properties: { ...outputs, ...assigned("TlsEdgeIpRestriction") },
    required: ["edgeId", "enabled", "ipPolicyIds"],
  };
}

/** The provider's configuration (its inputs): also what the plugin reads to know which are secret. */
export const PROVIDER_CONFIG: Record<string, PropertySpec> = {
  baseUrl: {
    type: "string",
    description:
      "A running edge service, e.g. https://edge.example.com. Absent: the embedded in-process service. Env fallback: EDGE_API_URL.",
  },
  apiKey: {
    type: "string",
    secret: true,
    description: "Bearer key for baseUrl. Env fallback: EDGE_API_KEY.",
  },
  dataDir: {
    type: "string",
    description:
      "Data directory of the embedded service. Default: .edge-service in the program's directory. Env fallback: EDGE_DATA_DIR.",
  },
  requestTimeoutMs: {
    type: "integer",
    description:
      "Per-attempt timeout of HTTP requests to baseUrl, in ms (default 30000). Env fallback: EDGE_REQUEST_TIMEOUT_MS.",
  },
  requestDeadlineMs: {
    type: "integer",
    description:
      "Bound on one call to baseUrl, its retries and their waits included, in ms (default 60000); each retry is logged. Env fallback: EDGE_REQUEST_DEADLINE_MS.",
  },
  caCertificate: {
    type: "string",
    description:
      "For an https:// baseUrl signed by a private CA: that CA's certificate, trusted besides the system's CAs; its PEM text, or the path of a PEM file (relative to the program's directory). Env fallback: EDGE_CA_CERTIFICATE.",
  },
  clientCertificate: {
    type: "string",
    description:
      "For a service that requires client certificates (mutual TLS): the certificate to present, as PEM text or a PEM file's path; set clientKey with it. PEM text that holds the key too (a combined file) must be a secret: a private key in plaintext is refused. EDGE_CLIENT_CERTIFICATE and EDGE_CLIENT_KEY, when set, win over both.",
  },
  clientKey: {
    type: "string",
    secret: true,
    description:
      "The private key of clientCertificate, unencrypted: PEM text, a secret (the SDKs mark this input so; as stack config, set it with --secret: a private key in plaintext is refused), or a PEM file's path. Env: EDGE_CLIENT_KEY (wins, with EDGE_CLIENT_CERTIFICATE).",
  },
};

/** The package schema for `version` (the npm package's version). */
export function buildSchema(version: string): PackageSchema {
  const b = new Builder();
  const resources = {
    [TOKEN("HttpsEdge")]: edgeResource(b, "HttpsEdge"),
    [TOKEN("TlsEdge")]: edgeResource(b, "TlsEdge"),
    [TOKEN("HttpsEdgeRoute")]: routeResource(b),
    [TOKEN("TlsEdgeIpRestriction")]: tlsIpRestrictionResource(b),
  };
  return {
    name: PACKAGE,
    displayName: "Edge",
    version,
    description:
      "Routes, modules and edges of the HTTPS/TLS edge management API, with a bundled implementation of that API (embedded by default).",
    keywords: ["pulumi", "edge", "category/network", "kind/native"],
    license: "Apache-2.0",
    // No pluginDownloadURL here: it is a release's, set when packing (EDGE_PLUGIN_DOWNLOAD_URL,
    // scripts/sdks.mjs). The engine names a stack's default provider after it, so a default
    // here would rename the provider of every stack deployed without one.
    meta: { moduleFormat: "(.*)" },
    config: { variables: PROVIDER_CONFIG },
    provider: {
      description:
        "The edge provider: where the edge API is (a running service, or the embedded one) and how to reach it.",
      inputProperties: PROVIDER_CONFIG,
    },
    types: Object.fromEntries(Object.entries(b.types).sort(([a], [c]) => a.localeCompare(c))),
    resources,
    language: {
      // The names users install and import: code that `pulumi import` generates imports these
      // (TypeScript: `import * as edge from "pulumi-edge/packaged"`; Python: `import pulumi_edge`).
      // The Node.js SDK ships inside the npm package pulumi-edge as its `packaged` subpath.
      nodejs: { packageName: "pulumi-edge/packaged", respectSchemaVersion: true },
      python: { packageName: "pulumi_edge", respectSchemaVersion: true, pyproject: { enabled: true } },
      go: {
        // The Go SDK is a module of its own (dist/sdks/go), as Pulumi lays out current providers.
        modulePath: "github.com/pulumi-edge/pulumi-edge/sdk/go",
        importBasePath: "github.com/pulumi-edge/pulumi-edge/sdk/go/edge",
        generateResourceContainerTypes: true,
        respectSchemaVersion: true,
      },
      csharp: { rootNamespace: "PulumiEdge", respectSchemaVersion: true },
    },
  };
}
