/**
 * `edge:requestTimeoutMs` (added so that stalls cost seconds, not the default 30 s): read from the
 * stack config or EDGE_REQUEST_TIMEOUT_MS, refused clearly when it is not a positive integer, and
 * applied per attempt (a stalled GET is abandoned and retried); the provider's HTTP client sends
 * an Idempotency-Key with every create.
 */
import { edgeClient } from "../../provider/client";
import { ProviderProcess } from "../../provider/engine/process";
import { faultProxy } from "./support";

const config = (values: Record<string, string>) => ({ get: (k: string) => values[k] });

test("edge:requestTimeoutMs: stack config, then EDGE_REQUEST_TIMEOUT_MS; anything but a positive integer is refused", () => {
  const configured = (env: NodeJS.ProcessEnv, values: Record<string, string> = {}) => {
    const host = new ProviderProcess(env);
    host.configure(config(values));
    return host.settings();
  };
  expect(configured({}, { "edge:requestTimeoutMs": "1500" }).requestTimeoutMs).toBe(1500);
  expect(configured({ EDGE_REQUEST_TIMEOUT_MS: "2500" }).requestTimeoutMs).toBe(2500);
  expect(configured({}).requestTimeoutMs).toBeUndefined();
  for (const bad of ["abc", "0", "-5", "1.5", "1e3x"]) {
    expect(() => configured({}, { "edge:requestTimeoutMs": bad })).toThrow(
      `edge:requestTimeoutMs must be a positive integer (milliseconds), got "${bad}"`,
    );
    expect(() => configured({ EDGE_REQUEST_TIMEOUT_MS: bad })).toThrow(/EDGE_REQUEST_TIMEOUT_MS must be/);
  }
});

test("the provider's client: a stalled request is abandoned after requestTimeoutMs and retried; creates carry a key", async () => {
  let stalled = false;
  const proxy = await faultProxy({
    target: "http://127.0.0.1:9", // never forwarded to: every request is stalled or refused
    seed: 1,
    rate: 0,
    intercept: () => {
      if (stalled) return "429"; // after the stall: a refusal every time (nothing to forward to)
      stalled = true;
      return "stall-before";
    },
  });
  try {
    const client = edgeClient({ baseUrl: proxy.url, dataDir: "", requestTimeoutMs: 300 });
    const err = await client.createHttpsEdge({}).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    // The stall was abandoned (not waited out for 30 s) and the create retried, with one key throughout.
    const posts = proxy.log.filter((r) => r.method === "POST");
    expect(posts.length).toBeGreaterThanOrEqual(2);
    expect(posts[0]!.action).toBe("stall-before");
    expect(new Set(posts.map((p) => p.idempotencyKey)).size).toBe(1);
    expect(posts[0]!.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
  } finally {
    await proxy.close();
  }
});
