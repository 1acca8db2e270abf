/**
 * Text is checked where the program still has it, on both faces, through the real engine: the
 * Node.js SDK's serialization drops half of a surrogate pair alone without a word (seen on
 * 3.259.0: `"lone \ud800 here"` reached the service and the state as `"lone  here"`), so the
 * provider never sees it. The contract's text rule runs in each resource's constructor (the
 * dynamic resources; the generated SDK, wired by scripts/sdks.mjs) before serialization:
 * `pulumi preview` fails naming the resource and the input, a value given as an Output is checked
 * when it resolves, a map's key as well as its values, and the resource's inputs are never sent.
 */
import { execFile } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Stack } from "@pulumi/pulumi/automation";
import type { Workspace } from "../support/workspace";
import { specWorkspace } from "../packaged/support/plugin";
import { type RecordingServer, recordingServer, setSpec, specStack } from "./support/harness";

const engine = require("../../scripts/engine.js") as typeof import("../../scripts/engine.js");
const FACES = ["dynamic", "packaged"] as const;
type Face = (typeof FACES)[number];

const LONE = "lone \ud800 here";
const ROUTE = { matchType: "path_prefix", match: "/text", description: "fine" };

let server: RecordingServer;
const ws = {} as Record<Face, Workspace>;
const stacks = {} as Record<Face, Stack>;

beforeAll(async () => {
  server = await recordingServer(mkdtempSync(join(tmpdir(), "edge-program-text-")));
  for (const face of FACES) {
    ws[face] = specWorkspace(face, `program-text-${face}`);
    stacks[face] = await specStack(ws[face], server.url, `text-${face}`);
  }
}, 300_000);

afterAll(async () => {
  await server?.close();
  for (const face of FACES) ws[face]?.cleanup();
});

/** The `pulumi` CLI on a face's stack: exit code and output. Async: the service runs in this process. */
function cli(face: Face, args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      join(engine.PULUMI_BIN, "pulumi"),
      [...args, "--stack", `text-${face}`, "--color", "never", "--non-interactive"],
      {
        cwd: ws[face].dir,
        env: { ...process.env, ...engine.engineEnv({ stateDir: ws[face].stateDir }) },
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, stdout, stderr) =>
        resolve({ code: error ? Number(error.code ?? 1) : 0, out: `${stdout}${stderr}` }),
    );
  });
}

/** Every request body the service got, as text: what was sent. */
const sent = () => server.requests.map((r) => JSON.stringify(r.body ?? null)).join("\n");

test.each(FACES)(
  "%s face: a lone surrogate in an input fails `pulumi preview`, naming the resource and the input",
  async (face) => {
    await setSpec(stacks[face], {
      edges: ["e"],
      routes: [{ name: "r", edge: "e", args: { ...ROUTE, description: LONE } }],
    });
    server.reset();
    const preview = await cli(face, ["preview"]);
    expect(preview.code).not.toBe(0);
    expect(preview.out).toContain(
      'HttpsEdgeRoute "r": input description must be well-formed Unicode: it holds half of a surrogate pair alone (\\ud800, at UTF-16 offset 5)',
    );
    expect(preview.out).toContain("Nothing was sent.");
    expect(server.mutations()).toEqual([]);
  },
  600_000,
);

test.each(FACES)(
  "%s face: given as an Output, it is checked when it resolves: `up` fails naming it, and the route is never sent",
  async (face) => {
    await setSpec(stacks[face], {
      edges: ["e"],
      routes: [{ name: "r", edge: "e", args: { ...ROUTE, description: `output:${LONE}` } }],
    });
    server.reset();
    const up = await cli(face, ["up", "--yes"]);
    expect(up.code).not.toBe(0);
    expect(up.out).toContain('HttpsEdgeRoute "r": input description must be well-formed Unicode');
    // Nothing of the route reached the service, cut or whole (the edge, which is fine, may have).
    expect(server.mutations().filter((r) => r.path.includes("/routes"))).toEqual([]);
    expect(sent()).not.toContain("lone");
  },
  600_000,
);

test.each(FACES)(
  "%s face: a map's key is text the service keeps too: a header name holding one is named",
  async (face) => {
    await setSpec(stacks[face], {
      edges: ["e"],
      routes: [{ name: "r", edge: "e", args: { ...ROUTE, requestHeaders: { add: { "X-\udfff": "v" } } } }],
    });
    const preview = await cli(face, ["preview"]);
    expect(preview.code).not.toBe(0);
    expect(preview.out).toContain(
      'HttpsEdgeRoute "r": input requestHeaders.add key "X-\\udfff" must be well-formed Unicode',
    );
  },
  600_000,
);

test.each(FACES)(
  "%s face: whole characters pass untouched, and the stack destroys",
  async (face) => {
    const text = "emoji 😀, bidi \u202e, U+FFFF \uffff";
    await setSpec(stacks[face], {
      edges: ["e"],
      routes: [{ name: "r", edge: "e", args: { ...ROUTE, description: `output:${text}` } }],
    });
    const up = await cli(face, ["up", "--yes"]);
    expect(up.code).toBe(0);
    const routes = server.mutations().filter((r) => r.method === "POST" && r.path.endsWith("/routes"));
    expect(routes.at(-1)?.body).toMatchObject({ description: text });
    expect((await cli(face, ["destroy", "--yes"])).code).toBe(0);
  },
  600_000,
);
