// The packaged face's floor: a provider plugin on @pulumi/pulumi/provider, like pulumi-resource-edge,
// that does nothing. check returns the inputs, diff answers "no changes", create echoes the inputs
// with an id, as bench/program/floor.ts does for the dynamic face. Same package name and version
// as the real plugin, so the same program and generated SDK run against it (found by path).
const provider = require("@pulumi/pulumi/provider");
const { randomUUID } = require("node:crypto");

const version = require("../../package.json").version;
provider.main(
  {
    version,
    check: async (_urn, _olds, news) => ({ inputs: news }),
    diff: async () => ({ changes: false, replaces: [], deleteBeforeReplace: false }),
    create: async (urn, inputs) => {
      const route = urn.includes("HttpsEdgeRoute");
      const id = `${route ? "edghtsrt" : "edghts"}_${randomUUID().replace(/-/g, "")}`;
      const uri = `http://edge-service.embedded/edges/https/${id}`;
      return { id, outs: { ...inputs, uri, createdAt: new Date().toISOString(), routeId: id } };
    },
    read: async (id, _urn, props) => ({ id, props, inputs: props }),
    update: async (_id, _urn, _olds, news) => ({ outs: news }),
    delete: async () => undefined,
  },
  process.argv.slice(2),
);
