/**
 * `pulumi-edge drift`'s pure half: the provider's "changed out of band" warning parsed, changed
 * fields found with secrets never shown, the exit code, and each rendering of one fleet report.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { EngineEvent } from "@pulumi/pulumi/automation";
import { parse as parseYaml } from "yaml";
import { DRIFT_USAGE, runDrift } from "../../commands/drift/cli";
import {
  authorsOf,
  changedFields,
  exitCode,
  type FleetReport,
  parseAuthorWarnings,
  renderJson,
  renderJunit,
  renderMarkdown,
  renderTable,
  showValue,
  type StackReport,
} from "../../commands/drift/report";
import { EventLog, engineMessage, parseStackArg } from "../../commands/drift/run";

const SECRET = "whsec_never_shown_0c5e";
const URN = "urn:pulumi:prod::shop::pulumi-nodejs:dynamic/edge:HttpsEdgeRoute::shop-r2";
const WARNING =
  'route shop-r2: backend.backendId changed out of band at 2026-11-25T12:03:11Z by key "ops-console" (request req_7f3a)';

describe("the author warning", () => {
  test("is parsed into field, time, key and request", () => {
    expect(parseAuthorWarnings(WARNING)).toEqual([
      { field: "backend.backendId", at: "2026-11-25T12:03:11Z", key: "ops-console", request: "req_7f3a" },
    ]);
  });

  test("several in one diagnostic, other lines and near misses skipped", () => {
    const text = [
      "some other warning about shop-r2",
      `${WARNING}\n`,
      'route shop-r2: circuitBreaker.numBuckets changed out of band at 2026-11-25T12:04:00Z by key "a \\"q\\" key" (request req_2)',
      'route shop-r2: backend.backendId changed at 2026-11-25T12:03:11Z by key "x" (request req_3)',
    ].join("\n");
    expect(parseAuthorWarnings(text).map((a) => [a.field, a.key, a.request])).toEqual([
      ["backend.backendId", "ops-console", "req_7f3a"],
      ["circuitBreaker.numBuckets", 'a "q" key', "req_2"],
    ]);
    expect(parseAuthorWarnings("route shop-r2: nothing to see")).toEqual([]);
  });

  test("belongs to the field it names, or one inside or around it", () => {
    const [a] = parseAuthorWarnings(WARNING);
    expect(authorsOf("backend.backendId", [a!])).toEqual([a]);
    expect(authorsOf("backend", [a!])).toEqual([a]);
    expect(authorsOf("backend.enabled", [a!])).toEqual([]);
    expect(authorsOf("backendX", [a!])).toEqual([]);
  });
});

describe("changed fields", () => {
  test("leaf paths of what differs, internal keys left out, from = the stack's, to = the live", () => {
    const declared = {
      __provider: "x",
      backend: { backendId: "bkd_a", enabled: true },
      match: "/a",
      ids: ["p1", "p2"],
    };
    const live = {
      __provider: "y",
      backend: { backendId: "bkd_b", enabled: true },
      match: "/a",
      ids: ["p1", "p3"],
      metadata: "m",
    };
    expect(changedFields(declared, live)).toEqual([
      { path: "backend.backendId", from: '"bkd_a"', to: '"bkd_b"' },
      { path: "ids[1]", from: '"p2"', to: '"p3"' },
      { path: "metadata", to: '"m"' },
    ]);
    expect(changedFields(declared, live, ["match"])).toEqual([]);
  });

  test("a secret is compared but shown only as [secret], whatever its form", () => {
    const sig = { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", value: SECRET };
    const fields = changedFields(
      { webhookVerification: { provider: "stripe", secret: sig } },
      { webhookVerification: { provider: "stripe", secret: "[secret]" } },
    );
    expect(fields).toEqual([{ path: "webhookVerification.secret", from: "[secret]", to: "[secret]" }]);
    expect(showValue({ a: sig, b: [sig] })).toBe('{"a":"[secret]","b":["[secret]"]}');
    expect(JSON.stringify(fields)).not.toContain(SECRET);
  });
});

describe("the engine's events", () => {
  const event = (e: Partial<EngineEvent>): EngineEvent => ({ sequence: 0, timestamp: 0, ...e });
  const step = (op: string, urn: string, old: object | undefined, now: object | undefined) =>
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

  test("the update step gives the drifted resource; warnings by URN give its authors", () => {
    const log = new EventLog();
    const stackUrn = "urn:pulumi:prod::shop::pulumi:pulumi:Stack::shop-prod";
    const other = "urn:pulumi:prod::shop::pulumi-nodejs:dynamic/edge:HttpsEdge::web";
    log.onEvent(step("refresh", URN, { backend: { backendId: "bkd_a" } }, {}));
    log.onEvent(
      event({ diagnosticEvent: { urn: URN, message: `${WARNING}\n`, color: "never", severity: "warning" } }),
    );
    log.onEvent(
      event({
        diagnosticEvent: {
          urn: other,
          message: WARNING.replace("req_7f3a", "req_other"),
          color: "never",
          severity: "warning",
        },
      }),
    );
    log.onEvent(
      step("update", URN, { backend: { backendId: "bkd_hotfix" } }, { backend: { backendId: "bkd_a" } }),
    );
    log.onEvent(step("same", other, {}, {}));
    log.onEvent(step("update", stackUrn, {}, {}));
    expect(log.drifted()).toEqual([
      {
        urn: URN,
        name: "shop-r2",
        type: "pulumi-nodejs:dynamic/edge:HttpsEdgeRoute",
        op: "update",
        fields: [{ path: "backend.backendId", from: '"bkd_a"', to: '"bkd_hotfix"' }],
        authors: [
          { field: "backend.backendId", at: "2026-11-25T12:03:11Z", key: "ops-console", request: "req_7f3a" },
        ],
      },
    ]);
  });

  test("a resource deleted out of band is a create with no fields; no warning, no author", () => {
    const log = new EventLog();
    log.onEvent(step("create", URN, undefined, { backend: { backendId: "bkd_a" } }));
    expect(log.drifted()).toEqual([expect.objectContaining({ op: "create", fields: [], authors: [] })]);
  });

  test("the engine's message: its error diagnostics, else the failed command's stderr", () => {
    expect(engineMessage(new Error("x"), ["\u001b[31merror: bad config\u001b[0m\n", "  second\n"])).toBe(
      "error: bad config\n  second",
    );
    // What the Automation API throws: its CommandError, holding the command's own stderr (the
    // classes are the package's own, constructed as it does; their constructors are not typed public).
    type Ctor = new (...args: unknown[]) => Error;
    const { CommandError } = require("@pulumi/pulumi/automation/errors") as { CommandError: Ctor };
    const { CommandResult } = require("@pulumi/pulumi/automation/cmd") as { CommandResult: Ctor };
    const commandError = new CommandError(
      new CommandResult(
        "",
        "Command failed with exit code 6: pulumi stack select --stack gone\nerror: no stack named 'gone' found\n",
        6,
      ),
    );
    expect(engineMessage(commandError, [])).toBe("error: no stack named 'gone' found");
    // Anything else: its own message.
    expect(engineMessage(new Error("the service is down"), [])).toBe("the service is down");
  });

  test("--stack DIR:STACK splits at the last colon and refuses a half", () => {
    expect(parseStackArg("infra/edge:prod")).toEqual({ dir: "infra/edge", stack: "prod" });
    expect(parseStackArg("C:/edge:acme/edge/prod")).toEqual({ dir: "C:/edge", stack: "acme/edge/prod" });
    expect(() => parseStackArg("prod")).toThrow(/DIR:STACK/);
    expect(() => parseStackArg("infra:")).toThrow(/DIR:STACK/);
  });
});

describe("the report", () => {
  const drifted: StackReport = {
    dir: "stacks/shop",
    stack: "prod",
    verdict: "drifted",
    seconds: 12.5,
    resources: [
      {
        urn: URN,
        name: "shop-r2",
        type: "pulumi-nodejs:dynamic/edge:HttpsEdgeRoute",
        op: "update",
        fields: [
          { path: "backend.backendId", from: '"bkd_a"', to: '"bkd_hotfix"' },
          { path: "webhookVerification.secret", from: "[secret]", to: "[secret]" },
        ],
        authors: parseAuthorWarnings(WARNING),
      },
    ],
  };
  const clean: StackReport = {
    dir: "stacks/blog",
    stack: "prod",
    verdict: "clean",
    resources: [],
    seconds: 3,
  };
  const broken: StackReport = {
    dir: "stacks/<api>",
    stack: "dev",
    verdict: "error",
    resources: [],
    error: 'error: edge:baseUrl "nope" is not a URL | & <fix it>',
    seconds: 1,
  };
  const fleet: FleetReport = { stacks: [drifted, clean, broken] };

  test("exit code: 0 clean, 1 drift, 2 error, and an error wins over drift", () => {
    expect(exitCode({ stacks: [clean] })).toBe(0);
    expect(exitCode({ stacks: [clean, drifted] })).toBe(1);
    expect(exitCode(fleet)).toBe(2);
    expect(exitCode({ stacks: [] })).toBe(0);
    const restored = { ...drifted, remediation: { outcome: "restored" as const } };
    expect(exitCode({ stacks: [restored] })).toBe(1);
    const refused = { ...drifted, remediation: { outcome: "refused" as const, message: "403" } };
    expect(exitCode({ stacks: [refused, clean] })).toBe(2);
  });

  test("table: a row per stack, then the fields with their authors and the errors in full", () => {
    const text = renderTable(fleet);
    const [header, ...rows] = text.split("\n");
    expect(header).toMatch(/^STACK\s+VERDICT\s+DETAIL$/);
    expect(rows.slice(0, 3)).toEqual([
      expect.stringMatching(/^stacks\/shop:prod\s+drifted\s+1 resource$/),
      expect.stringMatching(/^stacks\/blog:prod\s+clean$/),
      expect.stringMatching(/^stacks\/<api>:dev\s+error\s+error: edge:baseUrl "nope"/),
    ]);
    expect(text).toContain(
      'backend.backendId: "bkd_a" => "bkd_hotfix", by key "ops-console" at 2026-11-25T12:03:11Z (request req_7f3a)',
    );
    expect(text).toContain("webhookVerification.secret: [secret] => [secret], author unknown");
    expect(text.trimEnd().split("\n").pop()).toBe("3 stacks: 1 drifted, 1 clean, 1 error");
  });

  test("markdown: a summary table, a table per drifted stack, cells escaped", () => {
    const md = renderMarkdown(fleet);
    expect(md.split("\n")[0]).toBe("## 🔴 Edge drift: 3 stacks: 1 drifted, 1 clean, 1 error");
    expect(md).toContain("| `stacks/shop:prod` | drifted | 1 resource |");
    expect(md).toContain(
      '| `stacks/<api>:dev` | error | error: edge:baseUrl "nope" is not a URL \\| & <fix it> |',
    );
    expect(md).toContain(
      '| shop-r2 | `pulumi-nodejs:dynamic/edge:HttpsEdgeRoute` | `backend.backendId` | "bkd_a" => "bkd_hotfix" | by key "ops-console" at 2026-11-25T12:03:11Z (request req_7f3a) |',
    );
    expect(renderMarkdown({ stacks: [clean] }).split("\n")[0]).toBe(
      "## 🟢 Edge drift: 1 stack: 0 drifted, 1 clean, 0 error",
    );
  });

  test("json: the exit code, the counts and every stack", () => {
    const json = JSON.parse(renderJson(fleet)) as {
      exitCode: number;
      summary: object;
      stacks: StackReport[];
    };
    expect(json.exitCode).toBe(2);
    expect(json.summary).toEqual({ stacks: 3, clean: 1, drifted: 1, error: 1 });
    expect(json.stacks).toEqual([drifted, clean, broken]);
  });

  test("junit: one testsuite, a testcase per stack, drift a failure, a broken stack an error, escaped", () => {
    const xml = renderJunit(fleet);
    expect(xml).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?>\n<testsuites /);
    expect(xml.match(/<testsuite /g)).toHaveLength(1);
    expect(xml).toContain(
      '<testsuite name="pulumi-edge drift" tests="3" failures="1" errors="1" skipped="0"',
    );
    expect(xml.match(/<testcase /g)).toHaveLength(3);
    expect(xml).toContain('<testcase classname="stacks/blog" name="prod" time="3.000"/>');
    expect(xml).toMatch(
      /<failure type="drift" message="1 resource drifted">update shop-r2 [^<]*backend\.backendId: &quot;bkd_a&quot; =&gt; &quot;bkd_hotfix&quot;, by key &quot;ops-console&quot;/,
    );
    expect(xml).toContain('classname="stacks/&lt;api&gt;"');
    expect(xml).toContain(
      '<error type="error" message="error: edge:baseUrl &quot;nope&quot; is not a URL | &amp; &lt;fix it&gt;">',
    );
    expect(xml).not.toMatch(/<[^/?a-z]/);
  });

  test("no rendering ever holds a secret value", () => {
    const leaky: StackReport = {
      ...drifted,
      resources: [
        {
          ...drifted.resources[0]!,
          fields: changedFields(
            {
              oidc: {
                clientSecret: {
                  "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
                  value: SECRET,
                },
              },
            },
            { oidc: { clientSecret: "[secret]" } },
          ),
        },
      ],
    };
    for (const render of [renderTable, renderMarkdown, renderJson, renderJunit]) {
      const text = render({ stacks: [leaky] });
      expect(text).toContain("[secret]");
      expect(text).not.toContain(SECRET);
    }
  });
});

describe("the example's scheduled job (examples/drift-detection/ci/edge-drift-fleet.yml)", () => {
  interface Step {
    name?: string;
    id?: string;
    if?: string;
    run?: string;
    uses?: string;
    env?: Record<string, string>;
    with?: Record<string, unknown>;
  }
  const file = join(__dirname, "..", "..", "examples", "drift-detection", "ci", "edge-drift-fleet.yml");
  const workflow = parseYaml(readFileSync(file, "utf8")) as {
    on: { schedule: Array<{ cron: string }>; workflow_dispatch: unknown };
    jobs: { drift: { steps: Step[] } };
  };
  const steps = workflow.jobs.drift.steps;
  const drift = steps.find((s) => s.run?.includes("npx pulumi-edge drift"))!;

  test("runs on a schedule and by hand, with a read key from a secret", () => {
    expect(workflow.on.schedule[0]!.cron).toMatch(/^\S+ \S+ \S+ \S+ \S+$/);
    expect(workflow.on).toHaveProperty("workflow_dispatch");
    expect(drift.env!.EDGE_API_KEY).toMatch(/^\$\{\{ secrets\.\w+ \}\}$/);
  });

  test("passes only flags the command has, and publishes Markdown and JUnit", () => {
    const flags = drift.run!.match(/--[a-z-]+/g)!;
    for (const flag of flags) expect(DRIFT_USAGE).toContain(flag);
    expect(drift.run).toMatch(/--format markdown/);
    expect(drift.run).toContain('>> "$GITHUB_STEP_SUMMARY"');
    const junit = /--junit (\S+)/.exec(drift.run!)![1]!;
    expect(
      steps.some((s) => s.uses && Object.values(s.with ?? {}).some((v) => String(v).includes(junit))),
    ).toBe(true);
  });

  test("opens an issue only on drift or error, reusing the open one", () => {
    const issue = steps.find((s) => s.run?.includes("gh issue create"))!;
    expect(issue.if).toBe(`steps.${drift.id}.outputs.code != '0'`);
    expect(issue.run!.indexOf("gh issue list")).toBeLessThan(issue.run!.indexOf("gh issue create"));
    expect(issue.run).toContain("gh issue comment");
  });

  test("the cron form is valid bash", () => {
    const script = join(dirname(file), "..", "cron", "edge-drift-cron.sh");
    expect(() => execFileSync("bash", ["-n", script])).not.toThrow();
  });
});

describe("the command line, before any engine runs", () => {
  test("usage errors are exit 2 and say what to give; --help is exit 0", async () => {
    const errors: string[] = [];
    const err = jest.spyOn(console, "error").mockImplementation((m: string) => void errors.push(m));
    const log = jest.spyOn(console, "log").mockImplementation(() => undefined);
    try {
      expect(await runDrift(["--format", "xml", "--stack", "a:b"])).toBe(2);
      expect(await runDrift(["--parallel", "0", "--stack", "a:b"])).toBe(2);
      expect(await runDrift(["--bogus"])).toBe(2);
      expect(errors).toEqual([
        expect.stringContaining("--format xml: give one of table, markdown, json"),
        expect.stringContaining("--parallel 0: give a whole number ≥ 1"),
        expect.stringMatching(/bogus.*run pulumi-edge drift --help/),
      ]);
      expect(await runDrift(["--help"])).toBe(0);
      expect(log).toHaveBeenCalledWith(DRIFT_USAGE);
    } finally {
      err.mockRestore();
      log.mockRestore();
    }
  });
});
