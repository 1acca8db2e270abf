/**
 * The packaged face: a Pulumi provider plugin (`pulumi-resource-edge`) serving the four resource
 * types over the same lifecycles, model, plans and client as the dynamic face. It only adapts:
 * type tokens to resource kinds, Pulumi's secret wrappers in and out, a self-describing route id.
 */
import { VERSION } from "../../sdk/version";
import type * as provider from "@pulumi/pulumi/provider";
import { isDeepStrictEqual } from "node:util";
import {
  checkSettings,
  engineConfig,
  plaintextKeyInputProblem,
  plaintextKeyProblem,
  resolveSettings,
  type StackConfig,
  stackSettings,
} from "../config";
import { errorMessage } from "../../sdk/contract";
import { holdsPrivateKey } from "../../sdk/pem";
import { containsUnknown } from "../model/unknown";
import { type LeafPath, leafRelation } from "../model/leaves";
import { ANCHOR_KEY, type AnchorRecord, isAnchor, PLACE_KEY } from "../identity";
import { withLastWrite } from "../engine/call";
import { ProviderProcess } from "../engine/process";
import type { EdgeClient } from "../../sdk/client";
import {
  type Inputs,
  LIFECYCLES,
  type OperationContext,
  RESOURCE_KINDS,
  type ResourceKind,
  TYPE_NAMES,
} from "../lifecycle";
import { checkedInputs, type Created, type Read } from "../lifecycle/types";
import type { CheckFailure, Checked } from "../model/check";
import type { Plan } from "../plan/types";
import { isProps } from "../model/check";
import { engineFailures } from "../model/failures";
import { kindOfType, SECRET_LEAVES } from "../model";
import { writtenInputs } from "../model/written";
import type { PropertyChange } from "../plan/detail";
import { conceal, concealLeaves, isSecretWrapper, keepSecretsOf, reveal } from "../engine/secrets";
import { buildSchema, PACKAGE, PROVIDER_CONFIG } from "./schema";

/** One kind's lifecycle as the plugin calls it: the engine's values in, untyped until the lifecycle. */
interface KindHandler {
  check(news: unknown, olds: unknown): Checked<unknown>;
  diff(olds: unknown, news: unknown, id: string): Plan;
  create(client: EdgeClient, inputs: unknown, ctx: OperationContext): Promise<Created<unknown>>;
  read(
    client: EdgeClient,
    id: string,
    stored: unknown,
    ctx: OperationContext,
  ): Promise<Read<unknown, unknown> | undefined>;
  update(
    client: EdgeClient,
    id: string,
    olds: unknown,
    news: unknown,
    ctx: OperationContext,
  ): Promise<unknown>;
  delete(client: EdgeClient, id: string, stored: unknown, ctx: OperationContext): Promise<void>;
}

/** The handler of one kind: its lifecycle, typed by its kind; inputs typed as its check answered them. */
function handlerOf<K extends ResourceKind>(kind: K): KindHandler {
  const life = LIFECYCLES[kind];
  return {
    check: (news, olds) => life.check(news, olds),
    diff: (olds, news, id) => life.diff(olds, checkedInputs<Inputs<K>>(news), id),
    create: (client, inputs, ctx) => life.create(client, checkedInputs<Inputs<K>>(inputs), ctx),
    read: async (client, id, stored, ctx) => {
      const found = await life.read(client, id, stored, ctx);
      // An import (nothing stored yet): the inputs as a person writes them, the contract's
      // defaults left out, so that the code `pulumi import` generates reads naturally.
      const imported = isProps(stored) && Object.keys(stored).length === 0;
      return found && imported ? { ...found, inputs: writtenInputs(kind, found.inputs) } : found;
    },
    update: (client, id, olds, news, ctx) =>
      life.update(client, id, olds, checkedInputs<Inputs<K>>(news), ctx),
    delete: (client, id, stored, ctx) => life.delete(client, id, stored, ctx),
  };
}
const HANDLERS: ReadonlyMap<ResourceKind, KindHandler> = new Map(
  RESOURCE_KINDS.map((kind) => [kind, handlerOf(kind)]),
);

/** `urn:pulumi:<stack>::<project>::<parent types $>edge:index:HttpsEdgeRoute::<name>` → its kind. */
function kindOf(urn: string): ResourceKind {
  const type = urn.split("::")[2]?.split("$").pop() ?? "";
  const prefix = `${PACKAGE}:index:`;
  const kind = type.startsWith(prefix) ? kindOfType(type.slice(prefix.length)) : undefined;
  if (!kind)
    throw new Error(
      `the edge provider has no resource type ${type} (it has ${RESOURCE_KINDS.map((k) => prefix + TYPE_NAMES[k]).join(", ")})`,
    );
  return kind;
}

/**
 * The resource id this face shows. A route's is `<edgeId>/<routeId>`: it says where the route is,
 * so `pulumi import` and every later call need nothing else (the lifecycle reads both forms).
 */
function resourceId(kind: ResourceKind, id: string, outs: unknown): string {
  const edgeId = isProps(outs) ? outs.edgeId : undefined;
  return kind === "httpsEdgeRoute" && !id.includes("/") && typeof edgeId === "string"
    ? `${edgeId}/${id}`
    : id;
}

/** The handler of the kind `urn` names. */
function handlerFor(urn: string): { kind: ResourceKind; handler: KindHandler } {
  const kind = kindOf(urn);
  const handler = HANDLERS.get(kind);
  if (!handler) throw new Error(`no handler for ${kind}`); // every kind has one: RESOURCE_KINDS
  return { kind, handler };
}

export interface ProviderConfig {
  /** Provider inputs (`edge:baseUrl` as `baseUrl`), secrets possibly wrapped. */
  args: Record<string, unknown>;
  /** Stack config variables (`edge:config:baseUrl`), secrets decrypted. */
  variables: Record<string, string>;
  /** The provider resource's name, where the engine tells it (`default_0_1_0` for a default provider). */
  name?: string;
  /** The provider resource's URN, where the engine tells it. */
  urn?: string;
}

/** A default provider is the stack config's, not the program's: `default` or `default_<version>`. */
const isDefaultProvider = (name: string | undefined) => name !== undefined && /^default(_|$)/.test(name);

/**
 * The provider inputs the schema marks secret (`apiKey`): kept encrypted in the state whatever was
 * typed. Read from the schema's provider configuration, not from a whole `buildSchema` (tens of ms
 * of zod-to-JSON-Schema in every plugin process, for every command, to find one key).
 */
const SECRET_CONFIG = Object.entries(PROVIDER_CONFIG)
  .filter(([, p]) => p.secret)
  .map(([k]) => k);

/** What serve.ts answers CheckConfig with: the inputs the state keeps, and why a deploy refuses them. */
export interface ConfigChecked {
  inputs: Record<string, unknown>;
  failures: CheckFailure[];
}

/**
 * Provider inputs (or config variables under `prefix`) as a stack config: config values are
 * scalars, strings or the numbers and booleans the engine parsed; an empty one is unset.
 */
function configOf(values: Readonly<Record<string, unknown>>, prefix = ""): StackConfig {
  return {
    get: (key) => {
      const value = values[`${prefix}${key.replace(/^edge:/, "")}`];
      return typeof value === "string" || typeof value === "number" || typeof value === "boolean"
        ? String(value) || undefined
        : undefined;
    },
  };
}

/**
 * Refuses a provider input holding a private key that the engine did not hand over as a secret
 * (../config, the one rule): a setting typed without `--secret` for a default provider, an input
 * the program did not mark secret for an explicit one (every SDK marks `clientKey` itself).
 */
function refusePlaintextKeys(args: Readonly<Record<string, unknown>>, name: string | undefined): void {
  for (const [key, value] of Object.entries(args)) {
    if (typeof value !== "string") continue; // a secret arrives wrapped
    const problem = isDefaultProvider(name)
      ? plaintextKeyProblem(`edge:${key}`, value)
      : plaintextKeyInputProblem(key, value);
    if (problem)
      throw new Error(isDefaultProvider(name) ? problem : `provider "${name ?? ""}": input ${problem}`);
  }
}

/**
 * The strings in `news` (the engine's inputs, secrets wrapped) that hold a private key and are not
 * secret, with their paths as a program writes them; the credential leaves `leaves` aside (kept
 * secret whatever came).
 */
function plaintextKeys(news: unknown, leaves: readonly LeafPath[]): { path: string; value: string }[] {
  const found: { path: string; value: string }[] = [];
  const walk = (v: unknown, path: (string | number)[]) => {
    if (isSecretWrapper(v) || leafRelation(path, leaves).secret) return;
    if (typeof v === "string") {
      if (holdsPrivateKey(v)) found.push({ path: printedPath(path), value: v });
    } else if (Array.isArray(v)) v.forEach((x: unknown, i) => walk(x, [...path, i]));
    else if (isProps(v)) for (const [k, x] of Object.entries(v)) walk(x, [...path, k]);
  };
  walk(news, []);
  return found;
}

/** `["a", "b", 0, "X-Y"]` → `a.b[0]["X-Y"]`. */
const printedPath = (path: readonly (string | number)[]): string =>
  path
    .map((seg, i) =>
      typeof seg === "number"
        ? `[${seg}]`
        : /^[A-Za-z_$][\w$]*$/.test(seg)
          ? `${i === 0 ? "" : "."}${seg}`
          : `[${JSON.stringify(seg)}]`,
    )
    .join("");

export class EdgeProvider implements provider.Provider {
  readonly version = VERSION;

  /** The plugin process's state (see ../engine/process): made with the provider, at the process's start. */
  constructor(readonly host: ProviderProcess = new ProviderProcess()) {}

  getSchema(): Promise<string> {
    return Promise.resolve(JSON.stringify(buildSchema(VERSION)));
  }

  /**
   * The provider's inputs as the state keeps them (serve.ts answers CheckConfig with this): the
   * secret ones wrapped, so an API key set without `--secret` is encrypted in the state all the
   * same; and the stack's anchor with its place (../identity), kept from `olds` where they still
   * name this stack instance, else made anew (once per process and resource, however often the
   * engine checks it). With a failure where a deploy would refuse the settings (../config,
   * `checkSettings`: the URL, the CA, the client certificate and key): the settings the program
   * gives now, so `preview --refresh` refuses them too. A setting that holds a private key is kept
   * as it came, not wrapped: the engine hands CheckConfig no secrets, and Configure refuses the
   * key unless it was one.
   */
  checkConfig(urn: string, olds: unknown, news: unknown): ConfigChecked {
    this.checkedConfig.add(urn);
    const stored = isProps(olds) ? { anchor: olds[ANCHOR_KEY], place: olds[PLACE_KEY] } : {};
    const { record } = this.host.anchorFor(stored, this.host.log(urn), undefined, () => {
      let made = this.born.get(urn);
      if (made === undefined) {
        made = this.host.newAnchor();
        this.born.set(urn, made);
      }
      return made;
    });
    const given = isProps(news) ? news : {};
    const wrapped = SECRET_CONFIG.filter((k) => {
      const v = given[k];
      return !(typeof v === "string" && holdsPrivateKey(v));
    });
    const inputs = {
      ...conceal(given, wrapped),
      [ANCHOR_KEY]: record.anchor,
      ...(record.place === undefined ? {} : { [PLACE_KEY]: record.place }),
    };
    if (containsUnknown(given)) return { inputs, failures: [] }; // an explicit provider's, in a preview
    try {
      checkSettings(resolveSettings(stackSettings(configOf(given)), process.env, process.cwd()));
      return { inputs, failures: [] };
    } catch (e) {
      return { inputs, failures: [{ property: "", reason: errorMessage(e) }] };
    }
  }
  private readonly born = new Map<string, AnchorRecord>();
  /** The provider resources whose CheckConfig this process answered: Configure then has this run's inputs. */
  private readonly checkedConfig = new Set<string>();

  /**
   * Whether the provider's inputs differ beyond the anchor and its place (serve.ts answers
   * DiffConfig with this): a new anchor (a first update, a copied state) is no change, and no
   * change replaces the resources.
   */
  diffConfig(olds: unknown, news: unknown): boolean {
    const without = (v: unknown) => {
      const { [ANCHOR_KEY]: _anchor, [PLACE_KEY]: _place, ...rest } = isProps(v) ? v : {};
      return rest;
    };
    return !isDeepStrictEqual(without(olds), without(news));
  }

  /** The stack's anchor and its place, as the engine configured this provider (../identity). */
  private anchor: AnchorRecord | undefined;

  /** Called with the provider's configuration (see serve.ts: the framework does not pass it on). */
  configure({ args, variables, name, urn }: ProviderConfig): void {
    // A new anchor this process's CheckConfig gave the provider resource (a first update, a copy,
    // a damaged anchor) is in the state from this run on; but where DiffConfig saw no other change
    // the engine configures the provider with the old inputs, so the new anchor is taken from here.
    const made = urn === undefined ? undefined : this.born.get(urn);
    const anchor = made?.anchor ?? args[ANCHOR_KEY];
    const place = made ? made.place : args[PLACE_KEY];
    this.anchor = isAnchor(anchor) ? { anchor, ...(typeof place === "string" ? { place } : {}) } : undefined;
    // A default provider takes the stack's current config, which the engine hands the plugin
    // even where `args` are those saved at the last update (refresh and destroy without
    // --run-program): a key rotated or revoked since is the one used.
    const current = isDefaultProvider(name) ? engineConfig() : undefined;
    // This run's inputs (CheckConfig answered them here; not those saved in the state, which a
    // refresh or a destroy hands over): a private key among them the engine did not hand over as
    // a secret is refused before anything is done, or it would be saved in the state as it is.
    if (urn !== undefined && this.checkedConfig.has(urn)) refusePlaintextKeys(args, name);
    const revealed = reveal(args);
    const plain = current ?? (isProps(revealed) ? revealed : {});
    const stack = configOf(plain);
    this.host.configure({
      get: (key) => stack.get(key) ?? (current ? undefined : configOf(variables, "edge:config:").get(key)),
    });
    // Settings a deploy would refuse fail here, named, before any call: on a refresh or a destroy
    // too, which take the stack's current config (a default provider) or the saved inputs.
    checkSettings(this.host.settings());
  }

  check(urn: string, olds: unknown, news: unknown): Promise<provider.CheckResult> {
    const { kind, handler } = handlerFor(urn);
    const { inputs, failures } = handler.check(reveal(news), reveal(olds));
    // A private key the program did not mark secret (the credential leaves are kept secret anyway):
    // named by its path in the reason, with no property, which the engine would print the value of.
    const keys = plaintextKeys(news, SECRET_LEAVES[kind]).flatMap(({ path, value }) => {
      const reason = plaintextKeyInputProblem(path, value);
      return reason === undefined ? [] : [{ property: "", reason }];
    });
    return Promise.resolve({
      inputs: this.concealed(kind, inputs, news),
      failures: [
        ...keys,
        ...engineFailures(failures, news, { isSecretWrapper, leaves: SECRET_LEAVES[kind] }),
      ],
    });
  }

  /** The detailed diff of the last Diff of each resource, until serve.ts puts it on the wire. */
  private readonly detailed = new Map<string, PropertyChange[]>();

  diff(id: string, urn: string, olds: unknown, news: unknown): Promise<provider.DiffResult> {
    const { kind, handler } = handlerFor(urn);
    const plan = handler.diff(reveal(olds), reveal(news), id);
    this.host.diffed(kind, id, reveal(olds), plan);
    this.detailed.set(urn, plan.changes);
    return Promise.resolve({
      changes: plan.changed.length > 0,
      replaces: plan.replaces,
      deleteBeforeReplace: plan.deleteBeforeReplace === true,
    });
  }

  /** What the last Diff of `urn` changes, leaf by leaf (the framework's DiffResult has no room for it). */
  takeDetailedDiff(urn: string): PropertyChange[] | undefined {
    const changes = this.detailed.get(urn);
    this.detailed.delete(urn);
    return changes;
  }

  async create(urn: string, inputs: unknown): Promise<provider.CreateResult> {
    const { kind, handler } = handlerFor(urn);
    const { client, ctx } = this.host.operation(urn, {
      create: {
        record: this.anchor,
        renew:
          "Run `pulumi up` once without --target: the provider resource then gives the stack an anchor of its own.",
      },
    });
    const { id, outs } = await handler.create(client, reveal(inputs), ctx);
    return {
      id: resourceId(kind, id, outs),
      outs: withLastWrite(this.concealed(kind, outs, inputs), client),
    };
  }

  async read(id: string, urn: string, props?: unknown): Promise<provider.ReadResult> {
    const { kind, handler } = handlerFor(urn);
    const stored = reveal(props ?? {});
    const { client, ctx } = this.host.operation(urn, { stored });
    const found = await handler.read(client, id, stored, ctx);
    if (!found) {
      // An import reads with no properties: nothing there is an error, not "deleted since".
      if (isProps(stored) && Object.keys(stored).length === 0) {
        throw new Error(`there is no ${TYPE_NAMES[kind]} with the id "${id}" to import`);
      }
      return { id: "", props: {} }; // gone: refresh drops it, up recreates it
    }
    return {
      id: resourceId(kind, found.id, found.outs),
      props: withLastWrite(this.concealed(kind, found.outs, props), client, stored),
      inputs: this.concealed(kind, found.inputs, props),
    };
  }

  async update(id: string, urn: string, olds: unknown, news: unknown): Promise<provider.UpdateResult> {
    const { kind, handler } = handlerFor(urn);
    const { client, ctx } = this.host.operation(urn);
    const outs = await handler.update(client, id, reveal(olds), reveal(news), ctx);
    return { outs: withLastWrite(this.concealed(kind, outs, news), client, reveal(olds)) };
  }

  async delete(id: string, urn: string, props: unknown): Promise<void> {
    const { client, ctx } = this.host.operation(urn);
    await handlerFor(urn).handler.delete(client, id, reveal(props), ctx);
  }

  /**
   * Values going back to the engine: secret where the program's were (leaf by leaf inside a
   * module), and the secret leaves (credentials) always: the rest of a module stays readable.
   */
  private concealed(kind: ResourceKind, value: unknown, given: unknown) {
    return concealLeaves(keepSecretsOf(isProps(value) ? value : {}, given), SECRET_LEAVES[kind]);
  }
}
