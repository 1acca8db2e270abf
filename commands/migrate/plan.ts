/**
 * Moving a stack from the dynamic resources to the packaged provider without touching the
 * service: the dynamic resources are forgotten by the state (not deleted) and the same objects
 * are imported as packaged resources of the same names. Pulumi cannot alias across providers
 * (an alias to another provider is a replacement), hence state surgery plus import. Pure: the plan
 * from a stack export.
 */
import { STACK_ANCHOR } from "../../provider/identity";
import { kindOfType, type ResourceKind } from "../../provider/lifecycle";

/** What `pulumi stack export` holds of a resource (the fields used here). */
export interface ExportedResource {
  urn: string;
  type: string;
  id?: string;
  parent?: string;
  /** `<provider urn>::<provider id>` */
  provider?: string;
  outputs?: Record<string, unknown>;
}

/** An entry of `pulumi import --file` (https://www.pulumi.com/docs/iac/adopting-pulumi/import/). */
export interface ImportEntry {
  type: string;
  name: string;
  id: string;
  version?: string;
  parent?: string;
}

export interface MigrationPlan {
  /** Dynamic resources to forget, dependents first. */
  forget: string[];
  /** The same objects as packaged resources. */
  imports: ImportEntry[];
}

const DYNAMIC_TYPE = /^pulumi-nodejs:dynamic\/edge:(\w+)$/;

/** The packaged import id of a dynamic resource: a route's says its edge too. */
function importId(kind: ResourceKind, r: ExportedResource): string {
  if (!r.id) throw new Error(`${r.urn} has no id: run \`pulumi refresh\` first`);
  if (kind !== "httpsEdgeRoute") return r.id;
  const edgeId = r.outputs?.edgeId;
  if (typeof edgeId !== "string")
    throw new Error(`${r.urn} has no edgeId output: run \`pulumi refresh\` first`);
  return `${edgeId}/${r.id}`;
}

export function migrationPlan(resources: readonly ExportedResource[], version: string): MigrationPlan {
  const forget: string[] = [];
  const imports: ImportEntry[] = [];
  for (const r of resources) {
    const name = DYNAMIC_TYPE.exec(r.type)?.[1];
    // The dynamic resources' anchor (provider/identity) goes with them: the packaged provider
    // keeps an anchor of its own.
    if (name === STACK_ANCHOR) forget.unshift(r.urn);
    const kind = name ? kindOfType(name) : undefined;
    if (!kind) continue;
    forget.unshift(r.urn); // state order is dependencies first: forget in reverse
    const parent = r.parent && !r.parent.includes("::pulumi:pulumi:Stack::") ? r.parent : undefined;
    imports.push({
      type: `edge:index:${name}`,
      name: r.urn.slice(r.urn.lastIndexOf("::") + 2),
      id: importId(kind, r),
      version,
      ...(parent ? { parent } : {}),
    });
  }
  // The dynamic resources' provider goes with them, unless something else still uses it.
  const used = new Set(
    resources
      .filter((r) => !forget.includes(r.urn) && r.provider)
      .map((r) => r.provider!.split("::").slice(0, -1).join("::")),
  );
  const providers = resources.filter((r) => r.type === "pulumi:providers:pulumi-nodejs" && !used.has(r.urn));
  forget.push(...providers.map((r) => r.urn));
  return { forget, imports };
}
