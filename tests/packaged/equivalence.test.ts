/**
 * One brain, two faces: the same program change sends the same requests, in the same order,
 * whether the program uses the dynamic resources or the packaged provider. One table of changes
 * (every module added, changed and removed, the authentication switches, a replace, destroy) runs
 * through both faces against a recording server each. Ids are named by the program's names for
 * them. The engine fixes no order between independent resources (it may create two edges either
 * way round, within one face too), so "the same order" is each resource's own requests in order.
 */
import { scaled } from "../support/machine";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Stack } from "@pulumi/pulumi/automation";
import { quiet, type RecordingServer, recordingServer, setSpec, workspace } from "../engine/support/harness";
import type { Workspace } from "../support/workspace";
import { packagedWorkspace } from "./support/plugin";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");

const IDP = '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp"/>';
const allModules = {
  matchType: "path_prefix",
  match: "/a",
  backend: { backendId: "bkd_1" },
  ipRestriction: { ipPolicyIds: ["ipp_2", "ipp_1"] },
  circuitBreaker: { numBuckets: 10 },
  compression: {},
  requestHeaders: { add: { "X-A": "1" } },
  responseHeaders: { remove: ["Server"] },
  webhookVerification: { provider: "github", secret: "secret:whSecret" },
  websocketTcpConverter: {},
  userAgentFilter: { deny: ["bot"] },
  trafficPolicy: { value: "p1" },
};
const changed = {
  ...allModules,
  backend: { backendId: "bkd_2" },
  ipRestriction: { ipPolicyIds: ["ipp_3", "ipp_1", "ipp_2"] },
  circuitBreaker: { numBuckets: 12, trippedDuration: 5 },
  compression: { enabled: false },
  requestHeaders: { add: { "X-A": "2" }, remove: ["Cookie"] },
  responseHeaders: { remove: ["Server", "X-Powered-By"] },
  webhookVerification: { provider: "stripe", secret: "secret:whSecret" },
  websocketTcpConverter: { enabled: false },
  userAgentFilter: { allow: ["curl"], deny: ["bot"] },
  trafficPolicy: { value: "p2" },
};
const { compression: _c, userAgentFilter: _u, webhookVerification: _w, ...fewer } = changed;
const reordered = { ...fewer, ipRestriction: { ipPolicyIds: ["ipp_2", "ipp_3", "ipp_1"] } };
const oauth = { provider: { google: { emailDomains: ["example.com"] } } };
const oidc = { issuer: "https://login.example.com", clientId: "c", clientSecret: "secret:oidcSecret" };
const saml = { idpMetadata: IDP, nameidFormat: "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress" };

const spec = (route: Record<string, unknown> | undefined, tls?: Record<string, unknown>, edge = "e") => ({
  edges: ["e", "e2"],
  tlsEdges: ["t"],
  routes: route ? [{ name: "r", edge, args: route }] : [],
  tls: tls ? [{ name: "allow", edge: "t", args: tls }] : [],
});

/** The table: each step is one program change (the spec), deployed with `pulumi up`. */
const STEPS: Array<[string, ReturnType<typeof spec>]> = [
  [
    "create: edges, a route with every non-auth module, a TLS IP restriction",
    spec(allModules, { ipPolicyIds: ["x1"] }),
  ],
  ["change one inner field of every module", spec(changed, { ipPolicyIds: ["x1"] })],
  ["remove three modules", spec(fewer, { ipPolicyIds: ["x1"] })],
  ["reorder IP policy ids only (no change)", spec(reordered, { ipPolicyIds: ["x1"] })],
  ["add oauth", spec({ ...reordered, oauth }, { ipPolicyIds: ["x1"] })],
  ["switch oauth → oidc", spec({ ...reordered, oidc }, { ipPolicyIds: ["x1"] })],
  ["switch oidc → saml", spec({ ...reordered, saml }, { ipPolicyIds: ["x1"] })],
  [
    "remove saml, change description and match",
    spec({ ...reordered, match: "/b", description: "moved" }, { ipPolicyIds: ["x1"] }),
  ],
  [
    "TLS IP restriction: other policies, disabled",
    spec({ ...reordered, match: "/b", description: "moved" }, { ipPolicyIds: ["x2", "x3"], enabled: false }),
  ],
  [
    "replace: the route moves to another edge",
    spec(
      { ...reordered, match: "/b", description: "moved" },
      { ipPolicyIds: ["x2", "x3"], enabled: false },
      "e2",
    ),
  ],
  ["remove the TLS IP restriction and the route", spec(undefined)],
];

interface Face {
  ws: Workspace;
  server: RecordingServer;
  stack: Stack;
  /** Requests of each step, ids named after the program's resources. */
  steps: Request[][];
}
interface Request {
  /** The resource the request is about: `route r.1`, `edge e`, or the collection it creates in. */
  resource: string;
  text: string;
}

async function face(kind: "dynamic" | "packaged"): Promise<Face> {
  const ws =
    kind === "dynamic"
      ? workspace("spec-program", "equiv-dynamic")
      : packagedWorkspace("packaged-spec-program", "equiv-packaged");
  const server = await recordingServer(mkdtempSync(join(tmpdir(), `edge-equiv-${kind}-`)));
  const stack = await engine.directoryStack({ workDir: ws.dir, stackName: "equiv", stateDir: ws.stateDir });
  await stack.setConfig("edge:baseUrl", { value: server.url });
  await stack.setConfig("whSecret", { value: "wh-secret", secret: true });
  await stack.setConfig("oidcSecret", { value: "oidc-secret", secret: true });
  return { ws, server, stack, steps: [] };
}

/** Names ids after the program's resources, from the stack's outputs (a replaced route: r.1, r.2). */
class Names {
  private readonly names = new Map<string, string>();
  private readonly generations = new Map<string, number>();

  learn(outputs: Record<string, { value: unknown }>): void {
    const set = (id: unknown, name: string) => {
      if (typeof id !== "string" || this.names.has(id)) return;
      const n = (this.generations.get(name) ?? 0) + 1;
      this.generations.set(name, n);
      this.names.set(id, n === 1 && !name.startsWith("route") ? name : `${name}.${n}`);
    };
    for (const [n, id] of Object.entries((outputs.edgeIds?.value ?? {}) as Record<string, string>))
      set(id, `edge ${n}`);
    for (const [n, id] of Object.entries((outputs.tlsEdgeIds?.value ?? {}) as Record<string, string>))
      set(id, `tls ${n}`);
    for (const [n, r] of Object.entries(
      (outputs.routes?.value ?? {}) as Record<string, { id: string; routeId?: string }>,
    )) {
      set(r.routeId ?? r.id, `route ${n}`);
    }
  }

  request(r: { method: string; path: string; body?: unknown }): Request {
    let resource = r.path;
    const path = r.path.replace(/edghtsrt_\w+|edghts_\w+|edgtls_\w+/g, (id) => {
      const name = this.names.get(id) ?? `unknown ${id}`;
      resource = name;
      return `{${name}}`;
    });
    const body = r.body === undefined ? "" : ` ${JSON.stringify(r.body)}`;
    if (r.method === "POST") resource = `${path}${body}`; // a create: the new object is its own resource
    return { resource, text: `${r.method} ${path}${body}` };
  }
}

let dynamic: Face;
let packaged: Face;

beforeAll(async () => {
  dynamic = await face("dynamic");
  packaged = await face("packaged");
  for (const f of [dynamic, packaged]) {
    const names = new Names();
    for (const [, s] of STEPS) {
      f.server.reset();
      await setSpec(f.stack, s);
      const up = await f.stack.up(quiet);
      names.learn(up.outputs);
      f.steps.push(f.server.requests.map((r) => names.request(r)));
    }
    f.server.reset();
    await f.stack.destroy(quiet);
    f.steps.push(f.server.requests.map((r) => names.request(r)));
  }
  // Both faces through every step: 26 engine runs, minutes on a loaded 2-core machine.
}, scaled(900_000));

afterAll(async () => {
  for (const f of [dynamic, packaged]) {
    await f?.server.close();
    f?.ws.cleanup();
  }
});

/** Each resource's requests, in their order. */
const byResource = (requests: Request[]) => {
  const out: Record<string, string[]> = {};
  for (const r of requests) (out[r.resource] ??= []).push(r.text);
  return out;
};

test.each([...STEPS.map(([name], i) => [i, name] as const), [STEPS.length, "destroy"] as const])(
  "step %i (%s): the same requests, in the same order, from both faces",
  (i) => {
    expect(packaged.steps[i]!.map((r) => r.text).sort()).toEqual(dynamic.steps[i]!.map((r) => r.text).sort());
    expect(byResource(packaged.steps[i]!)).toEqual(byResource(dynamic.steps[i]!));
  },
);

test("the table exercises what it says (the requests themselves)", () => {
  const steps = dynamic.steps.map((requests) => requests.map((r) => r.text));
  const methods = (i: number) => steps[i]!.map((r) => r.split(" ")[0]).join(",");
  expect(steps[1]!.filter((r) => r.startsWith("PATCH"))).toHaveLength(1); // one PATCH, every module in it
  expect(methods(2)).toBe("DELETE,DELETE,DELETE,GET"); // one delete each, then the outputs read back
  expect(steps[3]).toEqual([]); // reordering ids is no change
  expect(steps[5]!.map((r) => r.replace(/ \{.*$/, ""))).toEqual([
    "PATCH /edges/https/{edge e}/routes/{route r.1}",
    "DELETE /edges/https/{edge e}/routes/{route r.1}/oauth",
    "PATCH /edges/https/{edge e}/routes/{route r.1}",
  ]);
  // Create before delete: the new route on the other edge first, then the old one goes.
  expect(steps[9]!.map((r) => r.replace(/ \{"match.*$/, ""))).toEqual([
    "POST /edges/https/{edge e2}/routes",
    "DELETE /edges/https/{edge e}/routes/{route r.1}",
  ]);
});
