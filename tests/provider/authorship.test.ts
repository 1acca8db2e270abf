/**
 * The authorship warning line (provider/lifecycle/authorship.ts): what attribution writes is what
 * `pulumi-edge drift` reads, for every verb and any text the service or the program hands us.
 */
import type { EngineEvent } from "@pulumi/pulumi/automation";
import fc from "fast-check";
import type { EdgeClient } from "../../sdk/client";
import type { AuditEvent } from "../../sdk/contract";
import {
  type FleetReport,
  renderJson,
  renderJunit,
  renderMarkdown,
  renderTable,
} from "../../commands/drift/report";
import { EventLog } from "../../commands/drift/run";
import type { OperationContext } from "../../provider/lifecycle";
import { attributeDeletion, attributeDrift, secretsChangedSince } from "../../provider/lifecycle/attribution";
import {
  AUTHOR_LABELS,
  type AuthorLine,
  formatAuthorLine,
  formatUnattributedLine,
  parseAuthorLine,
  parseAuthorLines,
  parseUnattributedLine,
  parseUnattributedLines,
  type UnattributedLine,
} from "../../provider/lifecycle/authorship";
import { FC_SEED } from "../reliability/support";
import { hostileText } from "../support/hostile-text";

const base = { at: "2026-11-25T12:03:11Z", key: "ops-console", request: "op_7jkEX0A8kv2EEGX8UAOm" };

describe("the authorship line", () => {
  test.each<[string, AuthorLine, string]>([
    [
      "a field changed",
      { label: "route", name: "shop-r2", field: "backend.backendId", verb: "changed", ...base },
      'route shop-r2: backend.backendId changed out of band at 2026-11-25T12:03:11Z by key "ops-console" (request op_7jkEX0A8kv2EEGX8UAOm)',
    ],
    [
      "a module deleted",
      { label: "route", name: "shop-r2", field: "compression", verb: "deleted", ...base },
      'route shop-r2: compression deleted out of band at 2026-11-25T12:03:11Z by key "ops-console" (request op_7jkEX0A8kv2EEGX8UAOm)',
    ],
    [
      "an object deleted",
      { label: "HTTPS edge", name: "web", verb: "deleted", ...base },
      'HTTPS edge web: deleted out of band at 2026-11-25T12:03:11Z by key "ops-console" (request op_7jkEX0A8kv2EEGX8UAOm)',
    ],
    [
      "a route deleted with its edge",
      { label: "route", name: "shop-r2", verb: "deleted", withEdge: "edghts_2Xb", ...base },
      'route shop-r2: deleted out of band with its edge edghts_2Xb at 2026-11-25T12:03:11Z by key "ops-console" (request op_7jkEX0A8kv2EEGX8UAOm)',
    ],
    [
      "a module created",
      {
        label: "IP restriction of TLS edge",
        name: "tls-ipr",
        field: "ipPolicyIds",
        verb: "created",
        ...base,
      },
      'IP restriction of TLS edge tls-ipr: ipPolicyIds created out of band at 2026-11-25T12:03:11Z by key "ops-console" (request op_7jkEX0A8kv2EEGX8UAOm)',
    ],
    [
      "no key, no request id",
      {
        label: "TLS edge",
        name: "t",
        field: "hostports",
        verb: "changed",
        ...base,
        key: "(none)",
        request: "(none)",
      },
      'TLS edge t: hostports changed out of band at 2026-11-25T12:03:11Z by key "(none)" (request (none))',
    ],
  ])("%s: the documented form, read back as written", (_, line, text) => {
    expect(formatAuthorLine(line)).toBe(text);
    expect(parseAuthorLine(text)).toEqual(line);
  });

  test("keys with quotes, backslashes and any Unicode; names that look like the line itself", () => {
    const lines: AuthorLine[] = [
      { label: "route", name: "r", field: "a.b", verb: "changed", ...base, key: 'a "q" key' },
      { label: "route", name: "r", field: "a.b", verb: "changed", ...base, key: "back\\slash\\" },
      { label: "route", name: "r", verb: "deleted", ...base, key: "clé 🔑 \u2028 \ud800 \n" },
      {
        label: "route",
        name: 'a: b changed out of band at x by key "k" (request y)',
        verb: "created",
        ...base,
      },
      { label: "route", name: "a", field: "b:", verb: "changed", ...base },
      { label: "route", name: '"quoted"', field: "changed", verb: "changed", ...base },
      { label: "route", name: "line\nbreak", field: "with space", verb: "deleted", ...base },
    ];
    for (const line of lines) {
      const text = formatAuthorLine(line);
      expect(text).not.toMatch(/[\n\r]/);
      expect(parseAuthorLine(text)).toEqual(line);
    }
  });

  test("other lines and near misses are not authorship", () => {
    for (const text of [
      "some other warning about shop-r2",
      'route shop-r2: backend.backendId changed at 2026-11-25T12:03:11Z by key "x" (request req_3)',
      'router shop-r2: a changed out of band at t by key "x" (request r)',
      'route shop-r2: a modified out of band at t by key "x" (request r)',
      "route shop-r2: a changed out of band at t by key x (request r)",
      'route shop-r2: a changed out of band at t by key "x\\q" (request r)',
    ])
      expect(parseAuthorLine(text)).toBeUndefined();
  });

  test("property: any line round-trips, alone or among others in one warning", () => {
    const line: fc.Arbitrary<AuthorLine> = fc
      .record({
        label: fc.constantFrom(...AUTHOR_LABELS),
        name: hostileText(),
        field: fc.option(hostileText(), { nil: undefined }),
        verb: fc.constantFrom("changed" as const, "deleted" as const, "created" as const),
        withEdge: fc.option(hostileText(), { nil: undefined }),
        at: fc.oneof(fc.constant(base.at), hostileText()),
        key: hostileText(),
        request: fc.oneof(fc.constant(base.request), hostileText()),
      })
      .map((l) => {
        const out = { ...l };
        if (out.field === undefined) delete out.field;
        if (out.withEdge === undefined) delete out.withEdge;
        return out;
      });
    fc.assert(
      fc.property(fc.array(line, { minLength: 1, maxLength: 4 }), hostileText(), (lines, noise) => {
        for (const l of lines) expect(parseAuthorLine(formatAuthorLine(l))).toEqual(l);
        // Other text in the same warning is skipped unless it is itself a whole line of the form.
        const message = [noise.replace(/[\r\n]/g, " "), ...lines.map(formatAuthorLine)].join("\n");
        const parsed = parseAuthorLines(message);
        expect(parsed.slice(parsed.length - lines.length)).toEqual(lines);
      }),
      { numRuns: 2000, seed: FC_SEED },
    );
  });
});

describe("the line of a drift without a provable author", () => {
  test("the documented form, read back as written; never read as an author", () => {
    const cases: Array<[UnattributedLine, string]> = [
      [
        {
          label: "route",
          name: "r0",
          field: "backend.backendId",
          verb: "changed",
          since: "op_7jkEX0A8kv2EEGX8UAOm",
        },
        "route r0: backend.backendId changed out of band, author unknown: the service's history does not reach the stack's last change (request op_7jkEX0A8kv2EEGX8UAOm): restored or pruned?",
      ],
      [
        { label: "route", name: "r12", verb: "deleted", since: "op_1" },
        "route r12: deleted out of band, author unknown: the service's history does not reach the stack's last change (request op_1): restored or pruned?",
      ],
      [
        {
          label: "IP restriction of TLS edge",
          name: "ipr",
          field: "ipPolicyIds",
          verb: "created",
          since: "op_2",
        },
        "IP restriction of TLS edge ipr: ipPolicyIds created out of band, author unknown: the service's history does not reach the stack's last change (request op_2): restored or pruned?",
      ],
    ];
    for (const [line, text] of cases) {
      expect(formatUnattributedLine(line)).toBe(text);
      expect(parseUnattributedLine(text)).toEqual(line);
      expect(parseAuthorLine(text)).toBeUndefined();
      expect(parseUnattributedLine(formatAuthorLine({ ...line, ...base }))).toBeUndefined();
    }
  });

  test("property: any line round-trips among author lines and other text", () => {
    const line: fc.Arbitrary<UnattributedLine> = fc
      .record({
        label: fc.constantFrom(...AUTHOR_LABELS),
        name: hostileText(),
        field: fc.option(hostileText(), { nil: undefined }),
        verb: fc.constantFrom("changed" as const, "deleted" as const, "created" as const),
        since: fc.oneof(fc.constant(base.request), hostileText()),
      })
      .map((l) => {
        const out = { ...l };
        if (out.field === undefined) delete out.field;
        return out;
      });
    fc.assert(
      fc.property(fc.array(line, { minLength: 1, maxLength: 4 }), hostileText(), (lines, noise) => {
        for (const l of lines) expect(parseUnattributedLine(formatUnattributedLine(l))).toEqual(l);
        const known = formatAuthorLine({ label: "route", name: "x", verb: "deleted", ...base });
        const message = [noise.replace(/[\r\n]/g, " "), known, ...lines.map(formatUnattributedLine)].join(
          "\n",
        );
        const parsed = parseUnattributedLines(message);
        expect(parsed.slice(parsed.length - lines.length)).toEqual(lines);
        expect(parseAuthorLines(message).at(-1)).toEqual(parseAuthorLine(known));
      }),
      { numRuns: 1000, seed: FC_SEED },
    );
  });
});

describe("`pulumi-edge drift` reads every line the provider writes", () => {
  const URN = "urn:pulumi:prod::shop::pulumi-nodejs:dynamic/edge:HttpsEdgeRoute::shop-r2";
  const EDGE_URN = "urn:pulumi:prod::shop::pulumi-nodejs:dynamic/edge:HttpsEdge::web";
  const event = (e: Partial<EngineEvent>): EngineEvent => ({ sequence: 0, timestamp: 0, ...e });
  const warning = (urn: string | undefined, message: string) =>
    event({ diagnosticEvent: { ...(urn ? { urn } : {}), message, color: "never", severity: "warning" } });
  const step = (op: string, urn: string, old?: object, now?: object) =>
    event({
      resourcePreEvent: {
        metadata: {
          op: op as never,
          urn,
          type: urn.split("::")[2]!,
          provider: "",
          old: old && ({ inputs: old } as never),
          new: now && ({ inputs: now } as never),
        },
      },
    });
  const ops = { ...base, key: 'ops "console"' };

  test("a module deleted out of band names its author (it showed 'author unknown')", () => {
    const log = new EventLog();
    const lines = [
      formatAuthorLine({ label: "route", name: "shop-r2", field: "compression", verb: "deleted", ...ops }),
      formatAuthorLine({ label: "route", name: "shop-r2", field: "oauth", verb: "created", ...ops }),
    ];
    log.onEvent(warning(URN, lines.join("\n")));
    log.onEvent(step("update", URN, { oauth: { provider: "github" } }, { compression: {} }));
    const [route] = log.drifted();
    expect(route!.authors).toEqual([
      { field: "compression", ...ops, change: "deleted" },
      { field: "oauth", ...ops, change: "created" },
    ]);
    const table = renderTable({
      stacks: [{ dir: "shop", stack: "prod", verdict: "drifted", resources: [route!], seconds: 1 }],
    });
    expect(table).toContain(
      `compression: removed (was {}), deleted by key "ops \\"console\\"" at ${base.at} (request ${base.request})`,
    );
    expect(table).toContain(`oauth: added {"provider":"github"}, created by key "ops \\"console\\""`);
  });

  test("a resource deleted out of band, or with its edge, shows who deleted it in every rendering", () => {
    const log = new EventLog();
    log.onEvent(
      warning(
        URN,
        formatAuthorLine({ label: "route", name: "shop-r2", verb: "deleted", withEdge: "edghts_1", ...ops }),
      ),
    );
    // A warning the engine did not attach to a resource: found by the name its line gives.
    log.onEvent(
      warning(undefined, formatAuthorLine({ label: "HTTPS edge", name: "web", verb: "deleted", ...ops })),
    );
    log.onEvent(step("create", EDGE_URN, undefined, { hostports: ["a:443"] }));
    log.onEvent(step("create", URN, undefined, { match: "/shop" }));
    const resources = log.drifted();
    expect(resources.map((r) => r.authors)).toEqual([
      [{ field: "", ...ops, change: "deleted" }],
      [{ field: "", ...ops, change: "deleted", edge: "edghts_1" }],
    ]);
    const report: FleetReport = {
      stacks: [{ dir: "shop", stack: "prod", verdict: "drifted", resources, seconds: 1 }],
    };
    const by = `by key "ops \\"console\\"" at ${base.at} (request ${base.request})`;
    expect(renderTable(report)).toContain(`    whole resource: deleted ${by}`);
    expect(renderTable(report)).toContain(`    whole resource: deleted with its edge edghts_1 ${by}`);
    expect(renderJunit(report)).toContain(`whole resource: deleted with its edge edghts_1 by key &quot;ops`);
    expect(renderMarkdown(report)).toContain(
      `| web | \`pulumi-nodejs:dynamic/edge:HttpsEdge\` |  | create | deleted by key`,
    );
  });
});

describe("`pulumi-edge drift` shows why a drift has no author, in every rendering", () => {
  const URN = "urn:pulumi:prod::shop::pulumi-nodejs:dynamic/edge:HttpsEdgeRoute::r0";
  const GONE = "urn:pulumi:prod::shop::pulumi-nodejs:dynamic/edge:HttpsEdgeRoute::r12";
  const event = (e: Partial<EngineEvent>): EngineEvent => ({ sequence: 0, timestamp: 0, ...e });
  const warning = (urn: string, message: string) =>
    event({ diagnosticEvent: { urn, message, color: "never", severity: "warning" } });
  const step = (op: string, urn: string, old?: object, now?: object) =>
    event({
      resourcePreEvent: {
        metadata: {
          op: op as never,
          urn,
          type: urn.split("::")[2]!,
          provider: "",
          old: old && ({ inputs: old } as never),
          new: now && ({ inputs: now } as never),
        },
      },
    });
  const reason =
    "the service's history does not reach the stack's last change (request op_day2): restored or pruned?";

  test("a restored field and a route lost with the restore: author unknown, and why", () => {
    const log = new EventLog();
    log.onEvent(
      warning(
        URN,
        formatUnattributedLine({
          label: "route",
          name: "r0",
          field: "backend.backendId",
          verb: "changed",
          since: "op_day2",
        }),
      ),
    );
    log.onEvent(
      warning(
        GONE,
        formatUnattributedLine({ label: "route", name: "r12", verb: "deleted", since: "op_day2" }),
      ),
    );
    log.onEvent(
      step("update", URN, { backend: { backendId: "bkd_1" } }, { backend: { backendId: "bkd_2" } }),
    );
    log.onEvent(step("create", GONE, undefined, { match: "/r12" }));
    const resources = log.drifted();
    expect(resources.map((r) => [r.authors, r.unattributed])).toEqual([
      [[], [{ field: "backend.backendId", since: "op_day2", reason }]],
      [[], [{ field: "", change: "deleted", since: "op_day2", reason }]],
    ]);
    const report: FleetReport = {
      stacks: [{ dir: "shop", stack: "prod", verdict: "drifted", resources, seconds: 1 }],
    };
    const table = renderTable(report);
    expect(table).toContain(`    backend.backendId: "bkd_2" => "bkd_1", author unknown: ${reason}`);
    expect(table).toContain(`    whole resource: deleted, author unknown: ${reason}`);
    expect(table).not.toContain("by key");
    expect(renderMarkdown(report)).toContain(
      `| r0 | \`pulumi-nodejs:dynamic/edge:HttpsEdgeRoute\` | \`backend.backendId\` | "bkd_2" => "bkd_1" | author unknown: ${reason} |`,
    );
    expect(renderMarkdown(report)).toContain(`| create | deleted, author unknown: ${reason} |`);
    expect(renderJunit(report)).toContain(`whole resource: deleted, author unknown: ${reason}`);
    const json = JSON.parse(renderJson(report)) as FleetReport;
    expect(json.stacks[0]!.resources[1]!.unattributed).toEqual([
      { field: "", change: "deleted", since: "op_day2", reason },
    ]);
  });
});

describe("attribution writes the line (provider/lifecycle/attribution.ts)", () => {
  const event = (id: string, changes: AuditEvent["changes"], operation = "update_route"): AuditEvent => ({
    id,
    time: "2026-11-25T12:03:11.482Z",
    operation,
    object_kind: "route",
    object_id: "edghtsrt_1",
    edge_id: "edghts_1",
    key: 'ops "console" ✓',
    request_id: `op_${id}`,
    changes,
    truncated: false,
  });
  /** What the route's warnings say on refresh, given the service's trail (newest first). */
  async function warned(
    events: AuditEvent[],
    act: (client: EdgeClient, ctx: OperationContext) => Promise<void>,
  ) {
    const warnings: string[] = [];
    const client = {
      listAuditEvents: async ({ objectId }: { objectId: string }) => ({
        audit_events: events.filter((e) => e.object_id === objectId),
        uri: "",
        next_page_uri: null,
      }),
    } as unknown as EdgeClient;
    // The same lines are handed to the caller as values: what the drift command's fast path reads.
    const handed: unknown[] = [];
    await act(client, {
      name: "shop r2: x",
      log: { info: () => undefined, warn: (m) => void warnings.push(m) },
      attribution: { author: (l) => void handed.push(l), unattributed: (l) => void handed.push(l) },
    });
    const lines = warnings.flatMap((w) => parseAuthorLines(w));
    expect(handed).toEqual(lines);
    return lines;
  }
  const what = { label: "route" as const, id: "edghtsrt_1", objectId: "edghtsrt_1", parentId: "edghts_1" };
  const who = { at: "2026-11-25T12:03:11Z", key: 'ops "console" ✓' };

  test("a module the state did not have is created, one it had is deleted, a field is changed", async () => {
    const lines = await warned(
      [
        event("3", { "oauth.provider": { after: "github" } }),
        event("2", { compression: { before: {} } }, "delete_compression_module"),
        event("1", { "backend.backend_id": { before: "bkd_1", after: "bkd_2" } }),
      ],
      (client, ctx) =>
        attributeDrift(
          client,
          ctx,
          what,
          { compression: {}, backend: { backend_id: "bkd_1" } },
          { oauth: { provider: "github" }, backend: { backend_id: "bkd_2" } },
        ),
    );
    expect(lines).toEqual([
      { label: "route", name: "shop r2: x", field: "compression", verb: "deleted", ...who, request: "op_2" },
      { label: "route", name: "shop r2: x", field: "oauth", verb: "created", ...who, request: "op_3" },
      {
        label: "route",
        name: "shop r2: x",
        field: "backend.backendId",
        verb: "changed",
        ...who,
        request: "op_1",
      },
    ]);
  });

  test("a route gone with its edge names the edge", async () => {
    const lines = await warned(
      [{ ...event("9", {}, "delete_https_edge"), object_id: "edghts_1" }],
      (client, ctx) => attributeDeletion(client, ctx, what),
    );
    expect(lines).toEqual([
      { label: "route", name: "shop r2: x", verb: "deleted", withEdge: "edghts_1", ...who, request: "op_9" },
    ]);
  });
});

describe("attribution names a key only with proof: a trail that does not reach the stack's write", () => {
  const event = (id: string, changes: AuditEvent["changes"], operation = "update_route"): AuditEvent => ({
    id,
    time: "2026-11-25T12:03:11.482Z",
    operation,
    object_kind: "route",
    object_id: "edghtsrt_1",
    edge_id: "edghts_1",
    key: "bootstrap",
    request_id: `op_${id}`,
    changes,
    truncated: false,
  });
  /** The warnings of a refresh whose state's last write is `lastWrite`, over `events` (newest first). */
  async function warnings(
    events: AuditEvent[],
    lastWrite: string,
    act: (client: EdgeClient, ctx: OperationContext) => Promise<void>,
  ) {
    const out: string[] = [];
    const client = {
      listAuditEvents: async ({ objectId }: { objectId: string }) => ({
        audit_events: events.filter((e) => e.object_id === objectId),
        uri: "",
        next_page_uri: null,
      }),
    } as unknown as EdgeClient;
    const handed: { authors: unknown[]; unattributed: unknown[] } = { authors: [], unattributed: [] };
    await act(client, {
      name: "r0",
      lastWrite,
      log: { info: () => undefined, warn: (m) => void out.push(m) },
      attribution: {
        author: (l) => void handed.authors.push(l),
        unattributed: (l) => void handed.unattributed.push(l),
      },
    });
    const said = {
      authors: out.flatMap(parseAuthorLines),
      unattributed: out.flatMap(parseUnattributedLines),
    };
    expect(handed).toEqual(said);
    return said;
  }
  const what = { label: "route" as const, id: "edghtsrt_1", objectId: "edghtsrt_1", parentId: "edghts_1" };
  // Day 1 the stack created the route on bkd_1 (op_1); day 2 it moved it to bkd_2 (op_day2, its
  // state's last write); a restore of day 1's backup brought bkd_1 back, with day 1's trail.
  const restored = [event("1", { "backend.backend_id": { after: "bkd_1" } }, "create_route")];

  test("a restored field names no key (it named the stack's own create), and says why", async () => {
    const said = await warnings(restored, "op_day2", (client, ctx) =>
      attributeDrift(
        client,
        ctx,
        what,
        { backend: { backend_id: "bkd_2" } },
        { backend: { backend_id: "bkd_1" } },
      ),
    );
    expect(said.authors).toEqual([]);
    expect(said.unattributed).toEqual([
      { label: "route", name: "r0", field: "backend.backendId", verb: "changed", since: "op_day2" },
    ]);
  });

  test("a change after retention pruned the stack's write is not named either: nothing proves it newer", async () => {
    const pruned = [event("7", { "backend.backend_id": { before: "bkd_2", after: "bkd_3" } })];
    const said = await warnings(pruned, "op_day2", (client, ctx) =>
      attributeDrift(
        client,
        ctx,
        what,
        { backend: { backend_id: "bkd_2" } },
        { backend: { backend_id: "bkd_3" } },
      ),
    );
    expect(said.authors).toEqual([]);
    expect(said.unattributed.map((l) => [l.field, l.since])).toEqual([["backend.backendId", "op_day2"]]);
  });

  test("the trail reaching the stack's write names the author as before", async () => {
    const reached = [
      event("7", { "backend.backend_id": { before: "bkd_2", after: "bkd_3" } }),
      { ...event("day2", { "backend.backend_id": { before: "bkd_1", after: "bkd_2" } }) },
      ...restored,
    ];
    const said = await warnings(reached, "op_day2", (client, ctx) =>
      attributeDrift(
        client,
        ctx,
        what,
        { backend: { backend_id: "bkd_2" } },
        { backend: { backend_id: "bkd_3" } },
      ),
    );
    expect(said.unattributed).toEqual([]);
    expect(said.authors.map((l) => l.request)).toEqual(["op_7"]);
  });

  test("an object gone with no trail of it since the stack's write: deleted, author unknown", async () => {
    // Created on day 2 (op_day2), so a restore of day 1's backup holds neither it nor its trail.
    const said = await warnings([], "op_day2", (client, ctx) => attributeDeletion(client, ctx, what));
    expect(said.authors).toEqual([]);
    expect(said.unattributed).toEqual([{ label: "route", name: "r0", verb: "deleted", since: "op_day2" }]);
  });

  test("a delete in a trail that does not reach the stack's write is still its author", async () => {
    const said = await warnings([event("8", {}, "delete_route")], "op_day2", (client, ctx) =>
      attributeDeletion(client, ctx, what),
    );
    expect(said.unattributed).toEqual([]);
    expect(said.authors.map((l) => [l.verb, l.request])).toEqual([["deleted", "op_8"]]);
  });

  test("a redacted secret counts as changed when the trail cannot say it was not", async () => {
    const client = {
      listAuditEvents: async () => ({
        audit_events: [
          event("1", { "webhook_verification.secret": { after: "[redacted]" } }, "create_route"),
        ],
        uri: "",
        next_page_uri: null,
      }),
    } as unknown as EdgeClient;
    const ctx = (lastWrite: string) => ({ lastWrite });
    // The trail reaches op_1 (the stack's create): nothing since, the state's secret stands.
    expect(
      await secretsChangedSince(client, ctx("op_1"), "edghtsrt_1", ["webhook_verification.secret"]),
    ).toEqual([]);
    // It does not reach op_day2: the restore may have brought back an older secret.
    expect(
      await secretsChangedSince(client, ctx("op_day2"), "edghtsrt_1", ["webhook_verification.secret"]),
    ).toEqual(["webhook_verification.secret"]);
  });
});
