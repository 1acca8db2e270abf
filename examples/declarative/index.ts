// [snippet: declarative-program]
import { deployEdgeConfig, loadEdgeConfig } from "pulumi-edge";

export = async () => {
  // Fails the preview, before any API call, with every problem as file:line:col: entry: field: message.
  const config = await loadEdgeConfig(`${__dirname}/edges.yaml`);
  const deployed = deployEdgeConfig(config);
  return {
    routes: Object.fromEntries(
      Object.entries(deployed.httpsEdges).flatMap(([edge, { routes }]) =>
        Object.entries(routes).map(([name, route]) => [`${edge}.${name}`, route.id]),
      ),
    ),
  };
};
// [/snippet]
