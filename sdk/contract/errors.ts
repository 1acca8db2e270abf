import { z } from "zod";

/**
 * The error catalogue of the API: every error the service sends has one of these codes.
 * Codes are stable; messages are for people.
 */
export const ERROR_CODES = {
  invalidBody: { code: "ERR_EDGE_100", status: 400 },
  validation: { code: "ERR_EDGE_101", status: 400 },
  unknownField: { code: "ERR_EDGE_102", status: 400 },
  unauthorized: { code: "ERR_EDGE_401", status: 401 },
  /** A valid API key whose scope does not cover the operation (a `read` key asking for a change). */
  forbidden: { code: "ERR_EDGE_403", status: 403 },
  notFound: { code: "ERR_EDGE_404", status: 404 },
  methodNotAllowed: { code: "ERR_EDGE_405", status: 405 },
  conflict: { code: "ERR_EDGE_409", status: 409 },
  payloadTooLarge: { code: "ERR_EDGE_413", status: 413 },
  unsupportedMediaType: { code: "ERR_EDGE_415", status: 415 },
  rateLimited: { code: "ERR_EDGE_429", status: 429 },
  internal: { code: "ERR_EDGE_500", status: 500 },
  /** The database cannot be reached for now (restart, failover): retry after Retry-After. */
  unavailable: { code: "ERR_EDGE_503", status: 503 },
  /**
   * The service cannot store changes for now: its disk is full, or its storage accepts no writes
   * (read-only). Nothing was changed, whatever the method: retry after Retry-After.
   */
  storageUnavailable: { code: "ERR_EDGE_507", status: 503 },
} as const;

export type ErrorKind = keyof typeof ERROR_CODES;

/** One problem with one field of a request. */
export const problemSchema = z.object({
  field: z.string(),
  msg: z.string(),
});
export type Problem = z.infer<typeof problemSchema>;

/** Body of every error response. */
export const errorBodySchema = z.object({
  error_code: z.string(),
  status_code: z.number().int(),
  msg: z.string(),
  details: z
    .object({
      operation_id: z.string().optional(),
      field: z.string().optional(),
      /** Present when more than one field is at fault: every problem, one message each. */
      problems: z.array(problemSchema).optional(),
      /**
       * The object the error is about, where there is one: for a 409, the object that already
       * holds the natural key (the edge serving a hostport); for an `Idempotency-Key` used before
       * with another request, the object that key made (docs/decisions.md#errors).
       */
      object_id: z.string().optional(),
    })
    .passthrough()
    .default({}),
});
export type ErrorBody = z.infer<typeof errorBodySchema>;

/** Header carrying the operation id of every response. */
export const OPERATION_ID_HEADER = "Request-Id";

/**
 * Header of a keyed create's answer when an earlier create with the same `Idempotency-Key` made the
 * object: `true`.
 */
export const REPLAYED_HEADER = "Idempotent-Replayed";

/**
 * A property of a thrown value of unknown type (a driver's `code`, a fetch failure's `cause`):
 * undefined when the value is no object or lacks it. Read this way, not cast.
 */
export const errorField = (error: unknown, key: string): unknown =>
  typeof error === "object" && error !== null ? Reflect.get(error, key) : undefined;

/** The message of a thrown value of unknown type. */
export const errorMessage = (error: unknown): string =>
  error instanceof Error ? error.message : String(error);

/**
 * A mistake in a command line or in what a command was asked to do: its message says what to
 * give instead, and the command exits 2 (a CI job must never read it as drift or success). Here,
 * at the bottom, so that the service's own checks of a command's arguments (API key names and
 * scopes) throw the very class every command tells.
 */
export class UsageError extends Error {}
