/**
 * What a stack's state (`pulumi stack export`) holds of this provider, read once for both uses of
 * `pulumi-edge drift`: the fast check judges these resources against the service, and the list of
 * objects no stack holds subtracts them from what the service has.
 */
import { join, resolve } from "node:path";
import type { ConfigMap, Deployment } from "@pulumi/pulumi/automation";
import { z } from "zod";
import { type ProviderSettings, settingsFor } from "../../provider/config";
import { fromExported, isSecretWrapper, reveal } from "../../provider/engine/secrets";
import { STACK_ANCHOR } from "../../provider/identity";
import { kindOfType, LIFECYCLES, type Location, type ResourceKind } from "../../provider/lifecycle";
import { isProps, type Props } from "../../provider/model/check";
import { readProject } from "../../provider/pulumi-files";

/** What `pulumi stack export` holds of a resource: the fields read here, the rest let through. */
const stateResourceSchema = z.looseObject({
  urn: z.string(),
  type: z.string(),
  custom: z.boolean().optional(),
  external: z.boolean().optional(),
  id: z.string().optional(),
  provider: z.string().optional(),
  inputs: z.record(z.string(), z.unknown()).optional(),
  outputs: z.record(z.string(), z.unknown()).optional(),
});
export type StateResource = z.output<typeof stateResourceSchema>;

/** The parts of an exported deployment read here. */
const deploymentSchema = z.looseObject({
  resources: z.array(stateResourceSchema).nullish(),
  pending_operations: z.array(z.unknown()).nullish(),
});

/**
 * A stack's resources, and whether an interrupted update left operations pending. A state that
 * is not what `pulumi stack export` writes is an error naming where it differs.
 */
export function stateOf(exported: Deployment): { resources: StateResource[]; pending: boolean } {
  const parsed = deploymentSchema.safeParse(exported.deployment);
  if (!parsed.success) {
    const where = parsed.error.issues.map((i) => `${["deployment", ...i.path].join(".")}: ${i.message}`);
    throw new Error(
      `the stack's exported state is not a deployment this command reads (${where.join("; ")}): check it with pulumi stack export`,
    );
  }
  return {
    resources: parsed.data.resources ?? [],
    pending: (parsed.data.pending_operations ?? []).length > 0,
  };
}

const OUR_TYPE = new RegExp(`^(?:pulumi-nodejs:dynamic/edge|edge:index):(\\w+)$`);

/** Ours (a kind), bookkeeping (the engine's or ours, nothing to judge), or another provider's. */
export function classify(r: StateResource): ResourceKind | "skip" | "foreign" {
  if (r.type === "pulumi:pulumi:Stack" || r.type.startsWith("pulumi:providers:")) return "skip";
  const name = OUR_TYPE.exec(r.type)?.[1];
  if (name === STACK_ANCHOR) return "skip";
  const kind = name === undefined ? undefined : kindOfType(name);
  if (kind) return r.external ? "skip" : kind; // a lookup (`get`) is read, never drift, never held
  return r.custom === false ? "skip" : "foreign"; // components hold nothing to refresh
}

/** Whether `v` holds a secret as a checkpoint keeps it, encrypted (`ciphertext`): only the CLI opens it. */
function holdsCiphertext(v: unknown): boolean {
  if (Array.isArray(v)) return v.some(holdsCiphertext);
  if (!isProps(v)) return false;
  if (isSecretWrapper(v) && "ciphertext" in v) return true;
  return Object.values(v).some(holdsCiphertext);
}

/** Whether a provider resource is a default provider (the stack's config configures it). */
const isDefaultProvider = (urn: string) => /::default(_|$)[^:]*$/.test(urn);

/**
 * A resource whose stored values this command reads (this provider's resources, an explicit
 * provider's inputs) and that holds an encrypted secret, as a stack's checkpoint file keeps it;
 * its URN, else undefined. Such a state is read through `pulumi stack export --show-secrets`,
 * which decrypts with the stack's secrets provider.
 */
export function encryptedRead(resources: readonly StateResource[]): string | undefined {
  for (const r of resources) {
    const kind = classify(r);
    const read =
      kind !== "skip" && kind !== "foreign"
        ? [r.inputs, r.outputs]
        : r.type.startsWith("pulumi:providers:") && !isDefaultProvider(r.urn)
          ? [r.inputs]
          : [];
    if (read.some(holdsCiphertext)) return r.urn;
  }
  return undefined;
}

/** A resource's stored values as the lifecycles take them: secrets revealed. */
export const revealed = (v: Props | undefined): Props => {
  const out = reveal(fromExported(v ?? {}));
  return isProps(out) ? out : {};
};

/** One of this provider's resources in a state, and where its object is on the service. */
export interface HeldResource {
  r: StateResource;
  /** The object's id, as the state holds it. */
  id: string;
  kind: ResourceKind;
  at: Location;
}

/** This provider's resources of a state that hold an object (lookups and bookkeeping left out). */
export function heldResources(resources: readonly StateResource[]): HeldResource[] {
  const out: HeldResource[] = [];
  for (const r of resources) {
    const kind = classify(r);
    if (kind === "skip" || kind === "foreign" || r.id === undefined) continue;
    out.push({ r, id: r.id, kind, at: LIFECYCLES[kind].locate(r.id, revealed(r.outputs)) });
  }
  return out;
}

/**
 * The key of the object a held resource manages, as `objectKey` makes it for an object the
 * service lists: ids are unique on a service, so a key says which object whatever stack holds it.
 */
export function heldKey(h: HeldResource): string {
  switch (h.kind) {
    case "httpsEdge":
      return objectKey("HttpsEdge", h.at.edgeId);
    case "tlsEdge":
      return objectKey("TlsEdge", h.at.edgeId);
    case "tlsEdgeIpRestriction":
      return objectKey("TlsEdgeIpRestriction", h.at.edgeId);
    case "httpsEdgeRoute":
      return objectKey("HttpsEdgeRoute", h.at.routeId ?? "");
  }
}

/** An object's key: its type and its own id (a route's, not its edge's; a module's, its TLS edge's). */
export const objectKey = (type: string, id: string): string => `${type}:${id}`;

/** The program's directory: the project's, or its `main` (where the provider runs). */
export function programDir(projectDir: string): string {
  const project = readProject(projectDir);
  const main = typeof project === "object" && typeof project.main === "string" ? project.main : ".";
  // `main` may name a file: its directory is the program's.
  return resolve(projectDir, /\.[cm]?[jt]s$|\.py$/.test(main) ? join(main, "..") : main);
}

/** Why a resource's provider settings cannot be known from the state. */
export class NoProvider {
  constructor(readonly reason: string) {}
}

/**
 * The settings each resource's provider runs with, as the engine would configure it: the stack's
 * config (the dynamic face, a default provider) or an explicit provider's inputs in the state;
 * the environment's fallbacks and EDGE_API_KEY over both.
 */
export function providerSettingsOf(
  resources: readonly StateResource[],
  config: ConfigMap,
  env: NodeJS.ProcessEnv,
  projectDir: string,
): { ofStack: () => ProviderSettings; of: (r: StateResource) => ProviderSettings | NoProvider } {
  const byUrn = new Map(resources.map((r) => [r.urn, r]));
  const dir = programDir(projectDir);
  const stackConfig = { get: (key: string) => config[key]?.value };
  const ofStack = () => settingsFor(stackConfig, env, dir);
  const of = (r: StateResource): ProviderSettings | NoProvider => {
    if (r.type.startsWith("pulumi-nodejs:")) return ofStack();
    const providerUrn = r.provider?.split("::").slice(0, -1).join("::");
    const provider = providerUrn === undefined ? undefined : byUrn.get(providerUrn);
    if (!provider) return new NoProvider(`the provider of ${r.urn} is not in the state`);
    if (isDefaultProvider(provider.urn)) return ofStack();
    const inputs = reveal(fromExported(provider.inputs ?? {}));
    const get = (key: string) => {
      const v = isProps(inputs) ? inputs[key.replace(/^edge:/, "")] : undefined;
      return typeof v === "string" || typeof v === "number" || typeof v === "boolean" ? String(v) : undefined;
    };
    return settingsFor({ get }, env, dir);
  };
  return { ofStack, of };
}
