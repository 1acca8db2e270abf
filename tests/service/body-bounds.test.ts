/**
 * The bounds on a body's lists and maps (issue 26, item 5): a list one item over its field's bound
 * is refused naming the field and the bound, the bound itself is accepted; a 250,000-item body is
 * refused with a small answer, before anything is stored; every list bound of the contract is in
 * the OpenAPI document. Over real HTTP and in-process. (How fast such bodies are refused is
 * measured by bench/invalid-bodies.mjs, not asserted here.)
 */
import { storeFingerprint } from "../support/fingerprint";
import {
  BODY_MAX_ITEMS,
  BODY_MAX_VALUES,
  buildOpenApi,
  ERROR_CODES,
  LIST_MAX_ITEMS,
  MAX_REPORTED_PROBLEMS,
} from "../../sdk/contract";
import { expectErrorBody, type Fixture, httpFixture, embeddedFixture, raw, uniqueMatch } from "./helpers";

const V = ERROR_CODES.validation.code;
const ids = (n: number) => Array.from({ length: n }, (_, i) => `pol_${i}`);
const headers = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`X-H${i}`, "v"]));

describe.each([
  ["over HTTP", httpFixture],
  ["in-process (embedded transport)", embeddedFixture],
])("body bounds %s", (_name, makeFixture) => {
  let fx: Fixture;
  let tlsId: string;
  let edgeId: string;
  let routeId: string;
  beforeAll(async () => {
    fx = await makeFixture();
    tlsId = (await fx.client.createTlsEdge({ hostports: ["bounds.example:443"] })).id;
    edgeId = (await fx.client.createHttpsEdge({})).id;
    routeId = (await fx.client.createRoute(edgeId, { match_type: "path_prefix", match: uniqueMatch() })).id;
  });
  afterAll(() => fx?.close());

  const put = (body: unknown) => raw(fx.transport, "PUT", `/edges/tls/${tlsId}/ip_restriction`, { body });
  const putModule = (name: string, body: unknown) =>
    raw(fx.transport, "PUT", `/edges/https/${edgeId}/routes/${routeId}/${name}`, { body });

  it("refuses ip_policy_ids one over its bound, naming the field and the bound; takes the bound", async () => {
    const over = await put({ ip_policy_ids: ids(LIST_MAX_ITEMS.ip_policy_ids + 1) });
    expectErrorBody(over, 400, V, "ip_policy_ids");
    expect(over.json.msg).toBe(`ip_policy_ids: must hold at most ${LIST_MAX_ITEMS.ip_policy_ids} items`);
    const at = await put({ ip_policy_ids: ids(LIST_MAX_ITEMS.ip_policy_ids) });
    expect(at.status).toBe(200);
    expect(at.json.ip_policies).toHaveLength(LIST_MAX_ITEMS.ip_policy_ids);
  });

  it("refuses 250,000 items with a small answer and changes nothing", async () => {
    const before = await storeFingerprint(fx.store);
    const res = await put({ ip_policy_ids: Array.from({ length: 250_000 }, () => ({})) });
    expectErrorBody(res, 400, V, "ip_policy_ids");
    expect(res.text.length).toBeLessThan(1000);
    // The same 250,000 items as lists within their bound: the bound on values in all refuses it.
    const nested = await put({
      ip_policy_ids: ["pol_1"],
      x: Array.from({ length: 250 }, () => Array.from({ length: 1000 }, () => ({}))),
    });
    expectErrorBody(nested, 400, V, "x");
    expect(nested.json.msg).toContain(`(${BODY_MAX_VALUES} in all)`);
    expect(await storeFingerprint(fx.store)).toEqual(before);
  });

  it("bounds header maps and lists, and any other list, by their fields", async () => {
    const add = await putModule("request_headers", { add: headers(LIST_MAX_ITEMS.add + 1) });
    expectErrorBody(add, 400, V, "add");
    expect(add.json.msg).toContain(`at most ${LIST_MAX_ITEMS.add} items`);
    const remove = await putModule("response_headers", {
      remove: Array.from({ length: LIST_MAX_ITEMS.remove + 1 }, (_, i) => `X-R${i}`),
    });
    expectErrorBody(remove, 400, V, "remove");
    const ok = await putModule("request_headers", { add: headers(LIST_MAX_ITEMS.add) });
    expect(ok.status).toBe(200);
    const emails = await putModule("oauth", {
      provider: {
        google: { email_domains: Array.from({ length: LIST_MAX_ITEMS.email_domains + 1 }, () => "x") },
      },
    });
    expectErrorBody(emails, 400, V, "provider.google.email_domains");
    const unknown = await putModule("compression", {
      junk: Array.from({ length: BODY_MAX_ITEMS + 1 }, () => 0),
    });
    expectErrorBody(unknown, 400, V, "junk");
    const hostports = await raw(fx.transport, "POST", "/edges/tls", {
      body: {
        hostports: Array.from({ length: LIST_MAX_ITEMS.hostports + 1 }, (_, i) => `h${i}.example:443`),
      },
    });
    expectErrorBody(hostports, 400, V, "hostports");
  });

  it("still reports at most MAX_REPORTED_PROBLEMS problems for a list of bad items within its bound", async () => {
    const res = await putModule("oauth", {
      provider: {
        google: { email_domains: Array.from({ length: LIST_MAX_ITEMS.email_domains }, () => "X") },
      },
    });
    expectErrorBody(res, 400, V, "provider.google.email_domains[0]");
    expect(res.json.details.problems).toHaveLength(MAX_REPORTED_PROBLEMS);
    expect(res.json.msg).toContain(
      `and ${LIST_MAX_ITEMS.email_domains - MAX_REPORTED_PROBLEMS} more problems`,
    );
  });
});

describe("the bounds in the OpenAPI document", () => {
  it("gives every bounded list and map of a request its bound, by field name", () => {
    const found = new Map<string, Set<number>>();
    const walk = (node: unknown, key?: string): void => {
      if (Array.isArray(node)) return node.forEach((n) => walk(n));
      if (node === null || typeof node !== "object") return;
      const o = node as Record<string, unknown>;
      const bound = o.maxItems ?? o.maxProperties;
      if (key !== undefined && typeof bound === "number") {
        found.set(key, (found.get(key) ?? new Set()).add(bound));
      }
      const props = o.properties as Record<string, unknown> | undefined;
      for (const [k, v] of Object.entries(props ?? {})) walk(v, k);
      for (const [k, v] of Object.entries(o)) if (k !== "properties") walk(v, key);
    };
    walk(buildOpenApi());
    for (const [field, max] of Object.entries(LIST_MAX_ITEMS)) {
      expect([field, [...(found.get(field) ?? [])]]).toEqual([field, [max]]);
    }
  });
});
