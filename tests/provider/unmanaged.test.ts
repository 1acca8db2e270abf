/**
 * `pulumi-edge drift --unmanaged`'s pure half: which objects of a service no checked stack's state
 * holds (routes inside a managed edge, a TLS IP restriction on a managed TLS edge, lookups not
 * counting as held), named as `pulumi-edge export` names them, and each rendering of the list.
 * Against the real service in memory; through the engine: tests/engine/restore.test.ts.
 */
import { EdgeClient } from "../../sdk/client";
import { createEdgeApp } from "../../service/http/app";
import { SqliteStore } from "../../service/store/store-sqlite";
import {
  exitCode,
  type FleetReport,
  renderJson,
  renderJunit,
  renderMarkdown,
  renderTable,
  type Unmanaged,
} from "../../commands/drift/report";
import { heldKey, heldResources, type StateResource } from "../../commands/drift/state";
import { unmanagedObjects } from "../../commands/drift/unmanaged";
import { exportFleet } from "../../commands/export/fleet";
import { readFleet } from "../../commands/export/read";

const app = createEdgeApp({ store: SqliteStore.open(":memory:") });
const client = new EdgeClient({ baseUrl: "http://edge.test", send: async (r) => app.fetch(r) });

const made: Record<string, string> = {};
let state: StateResource[] = [];

beforeAll(async () => {
  const web = await client.createHttpsEdge({ description: "Public web", hostports: ["www.example.com:443"] });
  const lab = await client.createHttpsEdge({ description: "", hostports: ["lab.example.com:443"] });
  const route = (edge: string, match: string) =>
    client.createRoute(edge, { match_type: "path_prefix", match, backend: { backend_id: "bkd_1" } });
  made.web = web.id;
  made.lab = lab.id;
  made.root = (await route(web.id, "/")).id;
  made.held = (await route(web.id, "/held")).id;
  made.orphan = (await route(web.id, "/orphan")).id;
  made.labRoute = (await route(lab.id, "/x")).id;
  for (const name of ["db", "db2"]) {
    const tls = await client.createTlsEdge({ description: name, hostports: [`${name}.example.com:5432`] });
    await client.putTlsIpRestriction(tls.id, { ip_policy_ids: ["ipp_office"] });
    made[name] = tls.id;
  }
  const packaged = (type: string, id: string, extra: Partial<StateResource> = {}): StateResource => ({
    urn: `urn:pulumi:prod::edge::edge:index:${type}::${id}`,
    type: `edge:index:${type}`,
    custom: true,
    id,
    provider: "urn:pulumi:prod::edge::pulumi:providers:edge::default_0_2_0::p",
    ...extra,
  });
  // One stack's state: a packaged face's resources, a dynamic face's route (its edge in its
  // outputs), a lookup of the lab edge, and the engine's and the provider's bookkeeping.
  state = [
    {
      urn: "urn:pulumi:prod::edge::pulumi:pulumi:Stack::edge-prod",
      type: "pulumi:pulumi:Stack",
      custom: false,
    },
    packaged("HttpsEdge", made.web),
    packaged("HttpsEdgeRoute", `${made.web}/${made.held}`),
    {
      urn: "urn:pulumi:prod::edge::pulumi-nodejs:dynamic/edge:HttpsEdgeRoute::root",
      type: "pulumi-nodejs:dynamic/edge:HttpsEdgeRoute",
      custom: true,
      id: made.root,
      outputs: { edgeId: made.web },
    },
    packaged("HttpsEdge", made.lab, { external: true }),
    packaged("TlsEdge", made.db!),
    packaged("TlsEdge", made.db2!),
    packaged("TlsEdgeIpRestriction", made.db2!),
  ];
});

test("only what no state holds: a route of a managed edge, a whole edge looked up only, a managed TLS edge's module", async () => {
  const fleet = await readFleet(client);
  const held = new Set(heldResources(state).map(heldKey));
  const objects = unmanagedObjects(fleet, held);
  const route = fleet.https.find((e) => e.id === made.web)!.routes.find((r) => r.id === made.orphan)!;
  const lab = fleet.https.find((e) => e.id === made.lab)!;
  expect(objects).toEqual([
    {
      type: "HttpsEdgeRoute",
      id: `${made.web}/${made.orphan}`,
      name: "public-web.orphan",
      createdAt: route.created_at,
      summary: `route path_prefix /orphan of HTTPS edge ${made.web}`,
      importCommand: `pulumi import edge:index:HttpsEdgeRoute public-web.orphan ${made.web}/${made.orphan}`,
    },
    {
      type: "HttpsEdge",
      id: made.lab,
      name: "lab-example-com",
      createdAt: lab.created_at,
      summary: "lab.example.com:443",
      importCommand: `pulumi import edge:index:HttpsEdge lab-example-com ${made.lab}`,
    },
    {
      type: "HttpsEdgeRoute",
      id: `${made.lab}/${made.labRoute}`,
      name: "lab-example-com.x",
      createdAt: lab.routes[0]!.created_at,
      summary: `route path_prefix /x of HTTPS edge ${made.lab}`,
      importCommand: `pulumi import edge:index:HttpsEdgeRoute lab-example-com.x ${made.lab}/${made.labRoute}`,
    },
    {
      type: "TlsEdgeIpRestriction",
      id: made.db,
      name: "db.ipRestriction",
      summary: `IP restriction of TLS edge ${made.db}: policies ipp_office`,
      importCommand: `pulumi import edge:index:TlsEdgeIpRestriction db.ipRestriction ${made.db}`,
    },
  ]);
  // The names and ids are the ones `pulumi-edge export` writes for the same objects.
  const exported = exportFleet(fleet, { version: "0.0.0" }).imports;
  for (const o of objects)
    expect(exported).toContainEqual(
      expect.objectContaining({ type: `edge:index:${o.type}`, logicalName: o.name, id: o.id }),
    );
  // Every object held: nothing to list.
  const all = new Set(
    heldResources([...state, ...exported.map((e) => ({ urn: e.name, type: e.type, id: e.id }))]).map(heldKey),
  );
  expect(unmanagedObjects(fleet, all)).toEqual([]);
});

describe("every rendering lists them, with what the list can be trusted for", () => {
  const orphan = {
    type: "HttpsEdgeRoute",
    id: "edghts_1/edghtsrt_9",
    name: "public-web.orphan",
    createdAt: "2026-11-27T10:00:00.000Z",
    summary: "route path_prefix /orphan of HTTPS edge edghts_1",
    importCommand: "pulumi import edge:index:HttpsEdgeRoute public-web.orphan edghts_1/edghtsrt_9",
  };
  const unmanaged: Unmanaged = {
    stacks: 2,
    complete: false,
    services: [
      { service: "http://127.0.0.1:8080", objects: [orphan] },
      { service: "/srv/edge/data", objects: [] },
    ],
    caveats: [
      "stacks/lab:*: its stacks could not be listed (no Pulumi.yaml): objects they hold are listed too",
    ],
  };
  const complete: Unmanaged = { ...unmanaged, complete: true, caveats: [] };
  const report: FleetReport = {
    stacks: [
      { dir: "stacks/shop", stack: "prod", verdict: "clean", resources: [], seconds: 1 },
      { dir: "stacks/shop", stack: "dev", verdict: "clean", resources: [], seconds: 1 },
    ],
    unmanaged,
  };
  const scope =
    "NOT COMPLETE, delete nothing on it: objects on the service that none of the 2 checked stacks holds, but what could not be listed, checked or read (1 caveat below) may hold some of them";
  const completeScope =
    "objects on the service that none of the 2 checked stacks holds: every project and stack found was read, so the list is complete unless a stack not given here deploys to the service (an object of a stack not checked is listed too)";

  test("the list says whether it is complete: never with a caveat", () => {
    expect(renderTable({ ...report, unmanaged: complete })).toContain(`Unmanaged: ${completeScope}.\n`);
    expect(renderTable(report)).toContain(`Unmanaged: ${scope}.\n`);
    expect(renderMarkdown(report)).toContain(`${scope}.`);
  });

  test("table", () => {
    const table = renderTable(report);
    expect(table).toContain(
      [
        `Unmanaged: ${scope}.`,
        "  http://127.0.0.1:8080: 1 object",
        "    HttpsEdgeRoute edghts_1/edghtsrt_9 created 2026-11-27T10:00:00.000Z: route path_prefix /orphan of HTTPS edge edghts_1",
        `      ${orphan.importCommand}`,
        "  /srv/edge/data: none",
        `  caveat: ${unmanaged.caveats[0]}`,
      ].join("\n"),
    );
    expect(table.trimEnd().split("\n").pop()).toBe(
      "2 stacks: 0 drifted, 2 clean, 0 error; 1 unmanaged object",
    );
  });

  test("markdown", () => {
    const md = renderMarkdown(report);
    expect(md).toContain("### Unmanaged objects");
    expect(md).toContain(
      `| \`http://127.0.0.1:8080\` | \`HttpsEdgeRoute\` | \`edghts_1/edghtsrt_9\` | 2026-11-27T10:00:00.000Z | route path_prefix /orphan of HTTPS edge edghts_1 | \`${orphan.importCommand}\` |`,
    );
    expect(md).toContain(`- caveat: ${unmanaged.caveats[0]}`);
  });

  test("json", () => {
    const json = JSON.parse(renderJson(report)) as {
      exitCode: number;
      summary: object;
      unmanaged: Unmanaged;
    };
    expect(json.unmanaged).toEqual(unmanaged);
    expect(json.unmanaged.complete).toBe(false);
    expect(json.summary).toEqual({ stacks: 2, clean: 2, drifted: 0, error: 0, unmanaged: 1 });
    expect(json.exitCode).toBe(2); // not complete: an error, whatever it lists
  });

  test("junit: a testcase per service, objects a failure, a service not listed an error, an incomplete list an error", () => {
    const broken: FleetReport = {
      ...report,
      unmanaged: {
        ...complete,
        services: [...unmanaged.services, { service: "http://gone", objects: [], error: "ECONNREFUSED" }],
      },
    };
    const xml = renderJunit(broken);
    expect(xml).toContain('<testsuite name="pulumi-edge drift" tests="5" failures="1" errors="1"');
    expect(xml).not.toContain('name="complete"');
    const incomplete = renderJunit(report);
    expect(incomplete).toContain('<testsuite name="pulumi-edge drift" tests="5" failures="1" errors="1"');
    expect(incomplete).toContain('<testcase classname="unmanaged" name="complete" time="0.000">');
    expect(incomplete).toContain('<error type="incomplete" message="1 caveat: the list is not complete">');
    expect(incomplete).toContain(`caveat: ${unmanaged.caveats[0]}`);
    expect(xml).toContain('<testcase classname="unmanaged" name="http://127.0.0.1:8080" time="0.000">');
    expect(xml).toContain('<failure type="unmanaged" message="1 object no checked stack holds">');
    expect(xml).toContain(`  ${orphan.importCommand}`);
    expect(xml).toContain('<error type="error" message="ECONNREFUSED">ECONNREFUSED</error>');
  });

  test("exit code: 1 for an object no checked stack holds, 2 for a service not listed or a list not complete, 0 without any", () => {
    expect(exitCode({ ...report, unmanaged: complete })).toBe(1);
    const none = { ...complete, services: [{ service: "http://127.0.0.1:8080", objects: [] }] };
    expect(exitCode({ ...report, unmanaged: none })).toBe(0);
    const failed = { ...none, services: [{ service: "http://gone", objects: [], error: "ECONNREFUSED" }] };
    expect(exitCode({ ...report, unmanaged: failed })).toBe(2);
    expect(exitCode(report)).toBe(2);
    expect(exitCode({ ...report, unmanaged: { ...none, complete: false, caveats: ["x"] } })).toBe(2);
  });
});
