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
} from "../identity";
import { HeldObjects } from "../lifecycle/held";
import type { OperationContext, ResourceLog } from "../lifecycle";
import { lastWriteOf } from "./call";
import { EngineLog } from "./log";

const secondsText = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** A retry as the CLI shows it: what failed, and how long the call may still go on. */
function retryText(n: RetryNotice): string {
  return `${n.operation}: ${n.reason} (attempt ${n.attempt}); retrying in ${secondsText(n.delayMs)}, giving up in ${secondsText(n.remainingMs)} (edge:requestDeadlineMs)`;
}

export class ProviderProcess {
  private stack: Partial<ProviderSettings> = {};
  private readonly engineLog = new EngineLog();
  private readonly held = new HeldObjects();
  private readonly born = new Set<string>();
  private readonly said = new Set<string>();
  private readonly places = new Map<string, Place | UnknownPlace>();

  constructor(
    private readonly env: NodeJS.ProcessEnv = process.env,
    private readonly around: () => Surroundings = surroundings,
  ) {}

  /** Sends the log to the engine at `address` (host:port), from now on. */
  connectEngine(address: string): void {
    this.engineLog.connect(address);
  }

  /** The engine's log of resource `urn` (or of the provider, when the face does not know the URN). */
  log(urn?: string): ResourceLog {
    return this.engineLog.of(urn);
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

  /** A new anchor, for a stack whose state holds none (or one that no longer serves). */
  newAnchor(): AnchorRecord {
    const anchor = anchorValue();
    this.born.add(anchor);
    const here = this.place();
    return { anchor, place: here instanceof UnknownPlace ? undefined : here };
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
    fresh: () => AnchorRecord = () => this.newAnchor(),
  ): { record: AnchorRecord; changed: boolean } {
    const verdict = judgeAnchor(stored, this.place(organization));
    if (verdict.action === "keep") return { record: verdict.record, changed: verdict.changed };
    if (verdict.why) this.warnOnce(`anchor ${verdict.why}`, log, verdict.why);
    return { record: fresh(), changed: true };
  }

  /** The client and context of one operation of `urn` (see OperationContext). */
  operation(
    urn: string | undefined,
    opts: { create?: { anchor: string | undefined }; stored?: unknown } = {},
  ): { client: EdgeClient; ctx: OperationContext } {
    const log = this.log(urn);
    const client = edgeClient(this.settings()).with({ onRetry: (n) => log.info(retryText(n)) });
    // The name is the URN's last part (`urn:pulumi:stack::project::type::name`).
    const name = urn?.split("::").pop() || undefined;
    return {
      client,
      ctx: {
        log,
        identity: opts.create ? this.identityOf(urn, opts.create.anchor, log) : undefined,
        held: this.held,
        name,
        lastWrite: lastWriteOf(opts.stored),
      },
    };
  }

  /** The identity of a create of `urn` under the stack's `anchor` (../identity). */
  private identityOf(
    urn: string | undefined,
    anchor: string | undefined,
    log: ResourceLog,
  ): string | undefined {
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
    assertAnchorKept(this.born.has(anchor), this.env);
    return anchoredIdentity(anchor, urn);
  }
}
