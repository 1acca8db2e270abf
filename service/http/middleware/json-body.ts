import type { MiddlewareHandler, Next } from "hono";
import { bodyShapeProblem, errorMessage, formatPath, MAX_BODY_BYTES } from "../../../sdk/contract";
import type { EdgeContext, Env } from "../context";
import { ApiError } from "../../errors";

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Reads and checks the JSON body of POST/PUT/PATCH before any handler runs
 * (docs/decisions.md#wire): non-JSON content type → 415, over 1 MiB → 413, not a JSON object → 400.
 * The parsed body is the context's `body`. Hono's body-limit middleware counts bytes the same way
 * but answers in its own shape, and would read the body a second time.
 */
export const jsonBody: MiddlewareHandler<Env> = (c, next) => readJsonBody(c, next);

/**
 * `jsonBody` for a PUT whose body may be absent (docs/decisions.md#compatibility): a request with
 * no bytes and no content type has the body `emptyAs(c)`, when that is defined; otherwise the rules
 * of `jsonBody` apply.
 */
export const jsonBodyOrEmpty =
  (emptyAs: (c: EdgeContext) => object | undefined): MiddlewareHandler<Env> =>
  async (c, next) => {
    if (c.req.header("content-type") === undefined) {
      const empty = emptyAs(c);
      if (empty !== undefined && (await hasNoBytes(c.req.raw))) {
        c.set("body", empty);
        return next();
      }
    }
    return readJsonBody(c, next);
  };

async function readJsonBody(c: EdgeContext, next: Next): Promise<void> {
  const type = (c.req.header("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json") {
    throw new ApiError(
      "unsupportedMediaType",
      "the request body must be JSON: send 'Content-Type: application/json'",
    );
  }
  const length = c.req.header("content-length");
  if (Number(length ?? "0") > MAX_BODY_BYTES) throw tooLarge();
  // With a declared length (the HTTP parser holds the body to it) read it whole: on
  // @hono/node-server that skips the WHATWG stream, a tenth of a POST's CPU. A body of unknown
  // length (chunked) is read piece by piece and refused as soon as it passes the limit.
  const bytes =
    length !== undefined
      ? new Uint8Array(await c.req.arrayBuffer())
      : await readLimited(c.req.raw, MAX_BODY_BYTES);
  if (bytes.byteLength > MAX_BODY_BYTES) throw tooLarge();
  // Before JSON.parse: a body of 250,000 items is refused in one pass over its bytes.
  const shape = bodyShapeProblem(bytes);
  if (shape) throw ApiError.invalid([shape]);
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw new ApiError("invalidBody", "the request body is not valid UTF-8");
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw new ApiError("invalidBody", `the request body is not valid JSON (${errorMessage(e)})`);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new ApiError("invalidBody", "the request body must be a JSON object");
  }
  const proto = protoKeyPath(parsed);
  if (proto) {
    throw ApiError.invalid([
      { field: formatPath(proto), msg: "is not allowed as a key (it cannot be stored)" },
    ]);
  }
  c.set("body", parsed);
  await next();
}

/**
 * Path of a "__proto__" key anywhere in a parsed body. JSON.parse keeps it as an own key, but
 * schema parsing drops it from maps (header maps) without a word: refuse it instead.
 * Iterative, paths built only for a hit: a body may nest far deeper than the call stack.
 */
function protoKeyPath(body: object): PropertyKey[] | undefined {
  type Node = { value: object; parent?: Node; key?: PropertyKey };
  const pending: Node[] = [{ value: body }];
  for (let node = pending.pop(); node !== undefined; node = pending.pop()) {
    if (Object.hasOwn(node.value, "__proto__")) {
      const path: PropertyKey[] = ["__proto__"];
      for (let n: Node | undefined = node; n?.key !== undefined; n = n.parent) path.push(n.key);
      return path.reverse();
    }
    for (const [key, inner] of Object.entries(node.value)) {
      if (inner !== null && typeof inner === "object") {
        pending.push({
          value: inner as object,
          parent: node,
          key: Array.isArray(node.value) ? Number(key) : key,
        });
      }
    }
  }
  return undefined;
}

const tooLarge = () => new ApiError("payloadTooLarge", `the request body exceeds ${MAX_BODY_BYTES} bytes`);

async function readLimited(req: Request, limit: number): Promise<Uint8Array> {
  if (!req.body) return new Uint8Array();
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

/** True when the request carries no body bytes at all (what is read of a non-empty body is dropped). */
async function hasNoBytes(req: Request): Promise<boolean> {
  if (!req.body) return true;
  const reader = req.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return true;
    if (value.byteLength > 0) {
      await reader.cancel();
      return false;
    }
  }
}
