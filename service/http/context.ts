/**
 * What every handler and middleware of the app shares: the context's variables, the operation id,
 * and the two ways an answer is built (success and error), so every answer carries its id.
 */
import type { Context } from "hono";
import {
  ERROR_CODES,
  type ErrorBody,
  type Operation,
  OPERATION_ID_HEADER,
  REPLAYED_HEADER,
  type Scope,
} from "../../sdk/contract";
import { ApiError } from "../errors";
import { newOperationId } from "../ids";
import type { ServiceLog } from "./log";
import { MissingSecretsKey, SecretsKeyError } from "../secrets";
import { type Deadline, StoreUnavailable } from "../store/store";

export type Env = {
  Variables: {
    operationId: string;
    body: unknown;
    /** A keyed create answered with the object an earlier create with its key made. */
    replayed: boolean;
    /** The operation of the table the request matched (set before any middleware runs); none for a 404/405. */
    operation: Operation | undefined;
    /** The name of the API key the request was authenticated with (set by the auth middleware). */
    keyName: string | undefined;
    /** That key's scope: a `read` key reads secrets redacted (docs/decisions.md#read-keys-redaction). */
    keyScope: Scope | undefined;
    /** The request's deadline once read (see ./request-start): null when it has none of its own. */
    deadline: Deadline | null | undefined;
  };
};
export type EdgeContext = Context<Env>;

/** The request's operation id (`Request-Id`), made on first use. */
export function operationId(c: EdgeContext): string {
  let id = c.get("operationId");
  if (id === undefined) {
    id = newOperationId();
    c.set("operationId", id);
  }
  return id;
}

/**
 * A success answer: JSON (or no body) with its operation id. Headers are a plain object, which
 * @hono/node-server writes straight to the socket; a Headers object costs more than a cached GET.
 */
export function respond(
  c: EdgeContext,
  status: number,
  body: string | Uint8Array<ArrayBuffer> | null,
  contentType = "application/json",
): Response {
  const headers: Record<string, string> = { [OPERATION_ID_HEADER]: operationId(c) };
  if (body !== null) headers["Content-Type"] = contentType;
  const replayed = c.get("replayed");
  if (replayed) headers[REPLAYED_HEADER] = "true";
  return new Response(body, { status, headers });
}

/**
 * The status a request is counted and logged with when its client closed the connection before
 * the answer was sent (nginx's "client closed request"): the client's doing, not a server error.
 */
export const CLIENT_CLOSED_REQUEST = 499;

/**
 * Whether the client closed its connection before its answer was sent. @hono/node-server passes
 * the Node request and response as the bindings (`env`); a response destroyed before it finished
 * lost its client (a hang-up mid-upload, or while the request waited). In process there are none.
 */
export function clientGone(env: unknown): boolean {
  const outgoing: unknown =
    typeof env === "object" && env !== null ? Reflect.get(env, "outgoing") : undefined;
  if (typeof outgoing !== "object" || outgoing === null) return false;
  return Reflect.get(outgoing, "destroyed") === true && Reflect.get(outgoing, "writableFinished") !== true;
}

/**
 * The answer to a request whose client went away: nobody reads it; its status tells the metrics
 * and the request's log line (one line, no stack trace) what happened.
 */
export function clientClosedAnswer(c: EdgeContext): Response {
  return new Response(null, {
    status: CLIENT_CLOSED_REQUEST,
    headers: { [OPERATION_ID_HEADER]: operationId(c) },
  });
}

/** An error answer (docs/decisions.md#errors), the operation id in the body and the header. */
export function errorResponse(c: EdgeContext, err: ApiError): Response {
  const id = operationId(c);
  const [first] = err.problems;
  const body: ErrorBody = {
    error_code: ERROR_CODES[err.kind].code,
    status_code: err.status,
    msg: err.message,
    details: {
      operation_id: id,
      ...(first ? { field: first.field } : {}),
      ...(err.problems.length > 1 ? { problems: err.problems } : {}),
      ...(err.objectId === undefined ? {} : { object_id: err.objectId }),
    },
  };
  return new Response(JSON.stringify(body), {
    status: err.status,
    headers: { ...err.headers, "Content-Type": "application/json", [OPERATION_ID_HEADER]: id },
  });
}

/** The answer for an error thrown anywhere: ours as they are, anything else a 500 that says nothing inside. */
export function errorAnswer(c: EdgeContext, err: unknown, log?: ServiceLog): Response {
  if (err instanceof ApiError) return errorResponse(c, err);
  if (err instanceof StoreUnavailable) {
    log?.event("warn", `unavailable ${operationId(c)}: ${err.message}`, { request_id: operationId(c) });
    return errorResponse(
      c,
      new ApiError(
        "unavailable",
        "the database cannot be reached for now (the request was not acknowledged); retry shortly",
        {
          headers: { "Retry-After": "1" },
        },
      ),
    );
  }
  if (err instanceof MissingSecretsKey) {
    // A replica not (yet) given the key the store now seals under: a rolling restart in progress.
    log?.event("error", `secrets key missing ${operationId(c)}: ${err.message}`, {
      request_id: operationId(c),
    });
    return errorResponse(
      c,
      new ApiError(
        "unavailable",
        `this replica was not given secrets key ${err.keyId}, which the stored secrets are sealed under: retry on another replica; its operator must restart it with that key (--secrets-key-file)`,
      ),
    );
  }
  if (err instanceof SecretsKeyError) {
    // A replica left running with the old key after `secrets rotate`, or data sealed elsewhere.
    log?.event("error", `secrets key error ${operationId(c)}: ${err.message}`, {
      request_id: operationId(c),
    });
    return errorResponse(
      c,
      new ApiError(
        "internal",
        "the service's secrets key does not open a stored secret: its operator must restart it with the key the data is sealed with (the service's log says which)",
      ),
    );
  }
  log?.event(
    "error",
    `internal error ${operationId(c)}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
    { request_id: operationId(c) },
  );
  return errorResponse(c, new ApiError("internal", "internal server error (reported with its operation id)"));
}
