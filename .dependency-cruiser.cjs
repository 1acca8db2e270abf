// Dependency direction (CONTRIBUTING.md "Layout"), checked by `npm run lint`: data flows one way,
// from a Pulumi program to the database, and no layer reaches up or sideways.
//
//   commands/                                   pulumi-edge: drift, export, migrate (use the provider)
//   provider/resources, provider/declarative   the program side (classes, edges.yaml)
//   provider/runtime, provider/dynamic          the dynamic face (in the engine's provider process)
//   provider/plugin                             the packaged face
//   provider/lifecycle                          what each Pulumi operation does, face-neutral
//   provider/plan                               pure plans + the one executor
//   provider/model                              canonical types and pure functions
//   service/                                    the bundled service, its stores, edge-service, the
//                                               in-process transport (the provider may choose it)
//   sdk/client → sdk/transport                  the typed client and the HTTP transport
//   sdk/contract                                zod schemas: imports nothing of ours
const ours = "^(index\\.ts|sdk/|service/|provider/|commands/)";
const layer = (name, from, to, comment) => ({
  name,
  comment,
  severity: "error",
  from: { path: from },
  to: { path: to, dependencyTypesNot: ["type-only", "type-import"] },
});

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment:
        "A cycle means two modules each depend on the other: split or move the shared part down. Type-only imports count too: a type cycle ties the modules as tightly for a reader.",
      from: { path: ours },
      to: { circular: true },
    },
    {
      name: "contract-imports-nothing-of-ours",
      severity: "error",
      comment: "sdk/contract is the one source of truth for wire shapes; it depends on nothing of ours.",
      from: { path: "^sdk/contract/" },
      to: { path: ours, pathNot: "^sdk/contract/" },
    },
    layer(
      "sdk-below-everything",
      "^sdk/",
      "^(service/|provider/|commands/|index\\.ts)",
      "The SDK knows nothing of Pulumi, the provider or the bundled service.",
    ),
    {
      name: "no-pulumi-below-faces",
      severity: "error",
      comment: "Only the faces (resources, declarative deployment, dynamic, runtime, plugin) know Pulumi.",
      from: { path: "^(sdk/|service/|provider/(model|plan|lifecycle)/|provider/(config|client)\\.ts)" },
      to: { path: "^(node_modules/)?@pulumi/" },
    },
    layer(
      "service-calls-nobody",
      "^service/(?!cli/)",
      "^(sdk/(client|transport)/|provider/|commands/|index\\.ts)",
      "The service answers requests; it calls nobody (its command, service/cli, may call a server).",
    ),
    layer(
      "service-below-the-provider",
      "^service/",
      "^(provider/|commands/|index\\.ts)",
      "The service serves any client; it knows nothing of Pulumi's side.",
    ),
    layer(
      "transport-below-client",
      "^sdk/transport/",
      "^sdk/client/",
      "Transports carry requests; the client sits above them.",
    ),
    layer(
      "provider-knows-no-command",
      "^(provider/|index\\.ts)",
      "^commands/",
      "The pulumi-edge command uses the provider; the provider knows nothing of it.",
    ),
    layer(
      "model-is-pure",
      "^provider/model/",
      "^(sdk/(client|transport)/|service/|commands/|provider/(?!model/))",
      "The model is pure: the contract in, canonical values out.",
    ),
    layer(
      "plan-below-faces",
      "^provider/plan/",
      "^(sdk/transport/|service/|commands/|provider/(lifecycle|dynamic|resources|declarative|plugin)/|provider/(runtime|config|client)\\.ts)",
      "Plans know the model and the typed client, nothing of transports or faces.",
    ),
    layer(
      "lifecycle-below-faces",
      "^provider/lifecycle/",
      "^(sdk/transport/|service/|commands/|provider/(dynamic|resources|declarative|plugin)/|provider/(runtime|config|client)\\.ts)",
      "Lifecycles take a client; the faces choose it.",
    ),
    layer(
      "program-side-stays-light",
      "^(index\\.ts|provider/(resources|declarative)/)",
      "^(sdk/transport/|service/|commands/|provider/(dynamic|lifecycle|plugin)/|provider/(runtime|client)\\.ts)",
      "A Pulumi program loads the classes, the model and the settings' rules (provider/config.ts, to check them where the program has them); the engine's provider process loads the client and the rest.",
    ),
    {
      name: "heavy-dependencies-only-in-the-service",
      severity: "error",
      comment: "SQLite's native binding, Hono and prom-client belong to the bundled service alone.",
      from: { path: ours, pathNot: "^service/" },
      to: {
        path: "^(node_modules/)?(libsql|hono|@hono|prom-client)(/|$)",
        dependencyTypesNot: ["type-only", "type-import"],
      },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(dist|tests|bench|examples|scripts)/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    moduleSystems: ["cjs", "es6"],
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["require", "node", "default", "types"],
    },
  },
};
