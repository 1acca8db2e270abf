/**
 * One provider process's state, made where the process starts (the dynamic provider host loading
 * `pulumi-edge/runtime`; the packaged plugin's entry) and handed to every operation, so that
 * nothing a provider decides hangs on hidden module state:
 * - the stack's `edge:*` settings, as the engine configured the provider (`configure`);
 * - the engine's log (./log), once the engine's address is known;
 * - the anchors this process made (../identity): a create under one of them is a first update's;
 * - the objects its creates answered with (../lifecycle/held);
 * - where the stack's state lives (../identity/place), read once;
 * - the warnings it has said, so that each is said once per process.
 */
import type { EdgeClient } from "../../sdk/client";
import type { RetryNotice } from "../../sdk/transport";
import { edgeClient } from "../client";
import { type ProviderSettings, resolveSettings, type StackConfig, stackSettings } from "../config";
import {
  type AnchorRecord,
  anchoredIdentity,
  anchorValue,
  assertAnchorKept,
  judgeAnchor,
  type Place,
  placeOf,
  type Surroundings,
  surroundings,
  UnknownPlace,
  unknownPlace,
} from "../identity";
import { HeldObjects } from "../lifecycle/held";
import { LIFECYCLES, type OperationContext, type ResourceKind, type ResourceLog } from "../lifecycle";
import { ReleaseBoard } from "../lifecycle/releases";
import type { Plan } from "../plan/types";
import { DEFAULT_DEADLINE_MS } from "../../sdk/transport";
import { lastWriteOf } from "./call";
import { EngineLog } from "./log";

const secondsText = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** A retry as the CLI shows it: what failed, and how long the call may still go on. */
function retryText(n: RetryNotice): string {
  return `${n.operation}: ${n.reason} (attempt ${n.attempt}); retrying in ${secondsText(n.delayMs)}, giving up in ${secondsText(n.remainingMs)} (edge:requestDeadlineMs)`;
}

/** What a test replaces of a provider process: the rest is the process's own. */
export interface ProcessSeams {
  /** The client for the settings (default: `edgeClient`, one per configuration). */
  clientOf?: (settings: ProviderSettings) => EdgeClient;
  /** The log of a resource (default: the engine's, once connected; else stderr). */
  logOf?: (urn: string | undefined) => ResourceLog;
  /** How long a create waits for an object it met to be announced as released (../lifecycle/releases). */
  releaseGraceMs?: number;
}

/** What a create knows of the stack's anchor: as its face received it, with what renews it. */
export interface CreateAnchor {
  /** The anchor and the place recorded with it, as this run's state holds them. */
  record: AnchorRecord | undefined;
  /** The stack's organization, where the face knows it (../identity/place). */
  organization?: string;
  /** What the user runs to have the anchor judged (and renewed) in this run: the face's words. */
  renew: string;
}

/** Why a create is refused whose anchor does not name the stack where its state lives now. */
function anchorNotJudged(was: string | undefined, here: Place | UnknownPlace, renew: string): string {
  const now = here instanceof UnknownPlace ? `a place that cannot be told (${here.reason})` : here;
  return (
    `this stack's anchor was recorded at ${was ?? "a place that could not be told"}, and its state now lives at ${now}: ` +
    `the state was copied or moved (or its place is unknown), and this run has not given it an anchor of its own, ` +
    `so a create under the old anchor could take the original stack's objects. Nothing was created. ${renew}`
  );
}

export class ProviderProcess {
  private stack: Partial<ProviderSettings> = {};
  private readonly engineLog = new EngineLog();
  private readonly held = new HeldObjects();
  private readonly releases = new ReleaseBoard();
  private readonly born = new Set<string>();
  private readonly said = new Set<string>();
  private readonly places = new Map<string, Place | UnknownPlace>();

  constructor(
    private readonly env: NodeJS.ProcessEnv = process.env,
    private readonly around: () => Surroundings = surroundings,
    private readonly seams: ProcessSeams = {},
  ) {}

  /** Sends the log to the engine at `address` (host:port), from now on. */
  connectEngine(address: string): void {
    this.engineLog.connect(address);
  }

  /** The engine's log of resource `urn` (or of the provider, when the face does not know the URN). */
  log(urn?: string): ResourceLog {
    return this.seams.logOf?.(urn) ?? this.engineLog.of(urn);
  }

  /** Says `message` on `log` once per process (`key` names what it is about). */
  warnOnce(key: string, log: ResourceLog, message: string): void {
    if (this.said.has(key)) return;
    this.said.add(key);
    log.warn(message);
  }

  /** Called with the stack's config (the dynamic provider's `configure`; the plugin's Configure). */
  configure(config: StackConfig): void {
    this.stack = stackSettings(config);
  }

  /** The settings the provider runs with now: the stack's, with the environment's fallbacks. */
  settings(): ProviderSettings {
    return resolveSettings(this.stack, this.env, process.cwd());
  }

  /** Where the stack's state lives now (read once per organization). */
  place(organization?: string): Place | UnknownPlace {
    const key = organization ?? "";
    let place = this.places.get(key);
    if (place === undefined) {
      place = placeOf(this.around(), organization);
      this.places.set(key, place);
    }
    return place;
  }

  /**
   * A new anchor, for a stack whose state holds none (or one that no longer serves), recorded with
   * the place of the stack's state (`organization`: the stack's, where the face knows it).
   */
  newAnchor(organization?: string): AnchorRecord {
    const anchor = anchorValue();
    this.born.add(anchor);
    const here = this.place(organization);
    return here instanceof UnknownPlace ? { anchor } : { anchor, place: here };
  }

  /**
   * The anchor this run keeps for a state that holds `stored` (../identity/anchor, `judgeAnchor`),
   * and whether that differs from what the state holds. `fresh` makes the new one where one is
   * needed (so that a face can give the same new anchor to repeated checks); `log` hears why, once.
   */
  anchorFor(
    stored: { anchor?: unknown; place?: unknown },
    log: ResourceLog,
    organization?: string,
    fresh: () => AnchorRecord = () => this.newAnchor(organization),
  ): { record: AnchorRecord; changed: boolean } {
    const here = this.place(organization);
    const verdict = judgeAnchor(stored, here);
    if (verdict.action === "new" && verdict.why) this.warnOnce(`anchor ${verdict.why}`, log, verdict.why);
    // An anchor kept or made where the place cannot be told is never kept in silence.
    if (here instanceof UnknownPlace) this.warnOnce(`unknown place`, log, unknownPlace(here));
    if (verdict.action === "keep") return { record: verdict.record, changed: verdict.changed };
    return { record: fresh(), changed: true };
  }

  /**
   * Hears a diff's plan of the object of resource id `id` (`stored`: its state): one that gives up
   * a natural key in this run is announced, for a create that meets it (../lifecycle/releases).
   */
  diffed(kind: ResourceKind, id: string, stored: unknown, plan: Plan): void {
    if (!plan.releases) return;
    const at = LIFECYCLES[kind].locate(id, stored);
    this.releases.announce(at.routeId ?? at.edgeId);
  }

  /** The client and context of one operation of `urn` (see OperationContext). */
  operation(
    urn: string | undefined,
    opts: { create?: CreateAnchor; stored?: unknown } = {},
  ): { client: EdgeClient; ctx: OperationContext } {
    const log = this.log(urn);
    const settings = this.settings();
    const client = (this.seams.clientOf ?? edgeClient)(settings).with({
      onRetry: (n) => log.info(retryText(n)),
    });
    // The name is the URN's last part (`urn:pulumi:stack::project::type::name`).
    const name = urn?.split("::").pop() || undefined;
    return {
      client,
      ctx: {
        log,
        identity: opts.create ? this.identityOf(urn, opts.create, log) : undefined,
        held: this.held,
        releases: this.releases.view(
          settings.requestDeadlineMs ?? DEFAULT_DEADLINE_MS,
          this.seams.releaseGraceMs,
        ),
        name,
        lastWrite: lastWriteOf(opts.stored),
      },
    };
  }

  /**
   * The identity of a create of `urn` under the stack's anchor (../identity), judged here where the
   * state lives now: a run that did not judge the stack's anchor itself (a targeted run that leaves
   * the StackAnchor out, on a copied state) must not create under its original's anchor.
   */
  private identityOf(urn: string | undefined, create: CreateAnchor, log: ResourceLog): string | undefined {
    const anchor = create.record?.anchor;
    if (urn === undefined || anchor === undefined) {
      // Neither face gets here for a resource it registered; a create without an anchor is made
      // once within this run's retries only.
      this.warnOnce(
        "no anchor",
        log,
        "this create carries no stack anchor: a create whose answer is lost is not recovered by a later run",
      );
      return undefined;
    }
    const here = this.place(create.organization);
    if (judgeAnchor({ anchor, place: create.record?.place }, here).action !== "keep") {
      throw new Error(anchorNotJudged(create.record?.place, here, create.renew));
    }
    if (here instanceof UnknownPlace) this.warnOnce(`unknown place`, log, unknownPlace(here));
    assertAnchorKept(this.born.has(anchor), this.env);
    return anchoredIdentity(anchor, urn);
  }
}
