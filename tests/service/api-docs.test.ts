/**
 * docs/api.md, the API reference in the repository, is rendered from the OpenAPI document the
 * service serves (`GET /openapi.json`); the committed copy must be today's.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { buildOpenApi } from "../../sdk/contract";

const { render, OUT } = require("../../scripts/api-docs.js") as typeof import("../../scripts/api-docs.js");
const ROOT = join(__dirname, "../..");

test("the committed docs/api.md is up to date (else: npm run api-docs)", () => {
  expect(readFileSync(join(ROOT, OUT), "utf8")).toBe(render(buildOpenApi()));
});

test("it names every operation, path and body schema of the document", () => {
  const doc = buildOpenApi() as {
    paths: Record<string, Record<string, { operationId: string }>>;
    components: { schemas: Record<string, unknown> };
  };
  const text = render(doc);
  for (const [path, methods] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(methods)) {
      expect(text).toContain(`### ${op.operationId}\n`);
      expect(text).toContain(`\`${method.toUpperCase()} ${path}\``);
    }
  for (const name of Object.keys(doc.components.schemas)) expect(text).toContain(`### ${name}\n`);
  // A field's rules come through: the circuit breaker's bucket count.
  expect(text).toMatch(/\| `num_buckets` \| integer \| {2}\| ≥ 1; ≤ 128 \|/);
});
