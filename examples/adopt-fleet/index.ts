// The edges.yaml that `pulumi-edge export` wrote, deployed on the packaged provider: the resources
// that `pulumi import --file import.json` adopted are these, by the same names.
// [snippet: adopt-fleet-program]
import { deployEdgeConfig, loadEdgeConfig } from "pulumi-edge";
import * as edge from "pulumi-edge/packaged";

export = async () => {
  const config = await loadEdgeConfig(`${__dirname}/edges.yaml`);
  const deployed = deployEdgeConfig(config, { resources: edge }); // the packaged resources: importable
  return {
    routes: Object.fromEntries(
      Object.entries(deployed.httpsEdges).flatMap(([name, { routes }]) =>
        Object.entries(routes).map(([route, r]) => [`${name}.${route}`, r.id]),
      ),
    ),
  };
};
// [/snippet]
