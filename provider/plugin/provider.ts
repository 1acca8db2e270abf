/**
 * The packaged face: a Pulumi provider plugin (`pulumi-resource-edge`) serving the four resource
 * types over the same lifecycles, model, plans and client as the dynamic face. It only adapts:
 * type tokens to resource kinds, Pulumi's secret wrappers in and out, a self-describing route id.
 */
import type * as provider from "@pulumi/pulumi/provider";
import { configureFromStack } from "../config";
import { operation } from "../engine/call";
import { type Inputs, LIFECYCLES, type Outputs, type ResourceKind, TYPE_NAMES } from "../lifecycle";
import { isProps } from "../model/check";
import { MODULE_PROPERTY, SECRET_MODULES } from "../model/route";
import type { PropertyChange } from "../plan/detail";
import { engineFailures } from "./failures";
import { buildSchema, PACKAGE } from "./schema";
import { conceal, reveal, secretProperties } from "./secrets";

const VERSION = (require("pulumi-edge/package.json") as { version: string }).version;

const KINDS = new Map(
  (Object.entries(TYPE_NAMES) as [ResourceKind, string][]).map(([kind, name]) => [
    `${PACKAGE}:index:${name}`,
    kind,
  ]),
);
/** Properties kept secret whatever the program marked: the modules that carry credentials. */
const ALWAYS_SECRET: Partial<Record<ResourceKind, readonly string[]>> = {
  httpsEdgeRoute: SECRET_MODULES.map((m) => MODULE_PROPERTY[m]),
};

/** `urn:pulumi:<stack>::<project>::<parent types $>edge:index:HttpsEdgeRoute::<name>` → its kind. */
function kindOf(urn: string): ResourceKind {
  const type = urn.split("::")[2]?.split("$").pop() ?? "";
  const kind = KINDS.get(type);
  if (!kind)
    throw new Error(
      `the edge provider has no resource type ${type} (it has ${[...KINDS.keys()].join(", ")})`,
    );
  return kind;
}

/**
 * The resource id this face shows. A route's is `<edgeId>/<routeId>`: it says where the route is,
 * so `pulumi import` and every later call need nothing else (the lifecycle reads both forms).
 */
function resourceId(kind: ResourceKind, id: string, outs: Outputs<ResourceKind>): string {
  return kind === "httpsEdgeRoute" && !id.includes("/")
    ? `${(outs as Outputs<"httpsEdgeRoute">).edgeId}/${id}`
    : id;
}

export interface ProviderConfig {
  /** Provider inputs (`edge:baseUrl` as `baseUrl`), secrets possibly wrapped. */
  args: Record<string, unknown>;
  /** Stack config variables (`edge:baseUrl`), secrets decrypted. */
  variables: Record<string, string>;
}

export class EdgeProvider implements provider.Provider {
  readonly version = VERSION;

  getSchema(): Promise<string> {
    return Promise.resolve(JSON.stringify(buildSchema(VERSION)));
  }

  /** Called with the provider's configuration (see serve.ts: the framework does not pass it on). */
  configure({ args, variables }: ProviderConfig): void {
    const plain = reveal(args) as Record<string, unknown>;
    configureFromStack({
      get: (key) => {
        const name = key.replace(/^edge:/, "");
        // Config values are scalars: strings, or numbers and booleans the engine parsed.
        const value = plain[name] ?? variables[key];
        return typeof value === "string" || typeof value === "number" || typeof value === "boolean"
          ? String(value) || undefined
          : undefined;
      },
    });
  }

  check(urn: string, olds: unknown, news: unknown): Promise<provider.CheckResult> {
    const kind = kindOf(urn);
    const { inputs, failures } = LIFECYCLES[kind].check(reveal(news), reveal(olds));
    return Promise.resolve({
      inputs: this.concealed(kind, inputs, news),
      failures: engineFailures(failures, news),
    });
  }

  /** The detailed diff of the last Diff of each resource, until serve.ts puts it on the wire. */
  private readonly detailed = new Map<string, PropertyChange[]>();

  diff(id: string, urn: string, olds: unknown, news: unknown): Promise<provider.DiffResult> {
    const { changed, replaces, changes } = LIFECYCLES[kindOf(urn)].diff(
      reveal(olds),
      reveal(news) as never,
      id,
    );
    this.detailed.set(urn, changes);
    // No create-before-delete clash exists: a replacement lives on another edge (or is another edge).
    return Promise.resolve({ changes: changed.length > 0, replaces, deleteBeforeReplace: false });
  }

  /** What the last Diff of `urn` changes, leaf by leaf (the framework's DiffResult has no room for it). */
  takeDetailedDiff(urn: string): PropertyChange[] | undefined {
    const changes = this.detailed.get(urn);
    this.detailed.delete(urn);
    return changes;
  }

  async create(urn: string, inputs: unknown): Promise<provider.CreateResult> {
    const kind = kindOf(urn);
    const { client, ctx } = operation(urn, { create: true });
    const { id, outs } = await LIFECYCLES[kind].create(client, reveal(inputs) as never, ctx);
    return { id: resourceId(kind, id, outs), outs: this.concealed(kind, outs, inputs) };
  }

  async read(id: string, urn: string, props?: unknown): Promise<provider.ReadResult> {
    const kind = kindOf(urn);
    const stored = reveal(props ?? {});
    const { client, ctx } = operation(urn);
    const found = await LIFECYCLES[kind].read(client, id, stored, ctx);
    if (!found) {
      // An import reads with no properties: nothing there is an error, not "deleted since".
      if (isProps(stored) && Object.keys(stored).length === 0) {
        throw new Error(`there is no ${TYPE_NAMES[kind]} with the id "${id}" to import`);
      }
      return { id: "", props: {} }; // gone: refresh drops it, up recreates it
    }
    return {
      id: resourceId(kind, found.id, found.outs),
      props: this.concealed(kind, found.outs, props),
      inputs: this.concealed(kind, found.inputs, props),
    };
  }

  async update(id: string, urn: string, olds: unknown, news: unknown): Promise<provider.UpdateResult> {
    const kind = kindOf(urn);
    const { client, ctx } = operation(urn);
    const outs = await LIFECYCLES[kind].update(client, id, reveal(olds), reveal(news) as never, ctx);
    return { outs: this.concealed(kind, outs, news) };
  }

  async delete(id: string, urn: string, props: unknown): Promise<void> {
    const { client, ctx } = operation(urn);
    await LIFECYCLES[kindOf(urn)].delete(client, id, reveal(props), ctx);
  }

  /** Values going back to the engine: secret where the program's were, and the credential modules always. */
  private concealed(kind: ResourceKind, value: Inputs<ResourceKind> | Outputs<ResourceKind>, given: unknown) {
    const keys = new Set([...(ALWAYS_SECRET[kind] ?? []), ...secretProperties(given)]);
    return conceal(isProps(value) ? value : {}, keys);
  }
}
