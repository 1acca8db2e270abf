/**
 * Render and its inverse (sdk/contract/render): what the service answers for a stored module, read
 * back by the provider, is the module that was stored, for every module and any valid
 * configuration (property test over the fuzz suite's valid bodies).
 */
import fc from "fast-check";
import {
  type ModuleRequest,
  moduleRequestOf,
  renderModule,
  ROUTE_MODULE_NAMES,
  ROUTE_MODULES,
  type RouteModuleName,
} from "../../sdk/contract";
import { MODULE_BODY } from "../reliability/fuzz";

const ctx = { baseUrl: "https://edge.test", routeId: "edghtsrt_1", samlCertificatePem: "PEM" };

test.each(ROUTE_MODULE_NAMES)("%s: request → response → request is the identity", (name: RouteModuleName) => {
  fc.assert(
    fc.property(MODULE_BODY[name], (body) => {
      const stored = ROUTE_MODULES[name].request.parse(body) as ModuleRequest<typeof name>;
      const answered = ROUTE_MODULES[name].response.parse(renderModule(name, stored, ctx));
      expect(moduleRequestOf(name, answered)).toEqual(stored);
    }),
    { numRuns: 200, seed: 20261124 },
  );
});

test("an unset num_buckets is rendered as the contract's 0 and read back as unset", () => {
  const stored = ROUTE_MODULES.circuit_breaker.request.parse({});
  const answered = renderModule("circuit_breaker", stored, ctx);
  expect(answered.num_buckets).toBe(0);
  expect(moduleRequestOf("circuit_breaker", answered)).not.toHaveProperty("num_buckets");
});
