/**
 * The fast drift path reads a stack's exported state (commands/drift/state.ts) through a schema
 * of the parts it reads: a state in that shape is read whole, the fields it does not read let
 * through; one in another shape is an error saying where, never a resource half read.
 */
import type { Deployment } from "@pulumi/pulumi/automation";
import { heldResources, stateOf } from "../../commands/drift/state";

const exported = (deployment: unknown): Deployment => ({ version: 3, deployment });

const route = {
  urn: "urn:pulumi:dev::shop::edge:index:HttpsEdgeRoute::r1",
  type: "edge:index:HttpsEdgeRoute",
  custom: true,
  id: "edghts_1/edghtsrt_1",
  inputs: { match: "/" },
  outputs: { edgeId: "edghts_1", routeId: "edghtsrt_1", match: "/" },
  created: "2026-11-27T10:00:00Z",
};

test("a state in export's shape is read, what it does not read let through", () => {
  const { resources, pending } = stateOf(exported({ manifest: {}, resources: [route] }));
  expect(pending).toBe(false);
  expect(resources).toEqual([route]);
  expect(stateOf(exported({ resources: [], pending_operations: [{ type: "creating" }] })).pending).toBe(true);
  expect(stateOf(exported({})).resources).toEqual([]);
});

test("a held resource carries its id as the state holds it", () => {
  const [held] = heldResources(stateOf(exported({ resources: [route] })).resources);
  expect(held).toMatchObject({
    id: route.id,
    kind: "httpsEdgeRoute",
    at: { edge: "https", edgeId: "edghts_1" },
  });
});

test("a state in another shape is an error naming where", () => {
  expect(() => stateOf(exported({ resources: [{ ...route, urn: 7 }] }))).toThrow(
    /exported state is not a deployment this command reads \(deployment\.resources\.0\.urn: .*\): check it with pulumi stack export/,
  );
  expect(() => stateOf(exported({ resources: [{ ...route, inputs: "x" }] }))).toThrow(
    /deployment\.resources\.0\.inputs/,
  );
  expect(() => stateOf(exported("not a deployment"))).toThrow(/not a deployment this command reads/);
});
