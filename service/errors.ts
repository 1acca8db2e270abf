import { ERROR_CODES, type ErrorKind, MAX_REPORTED_PROBLEMS, type Problem } from "../sdk/contract";

/** An error the service answers with: a kind from the catalogue, a message, maybe the field(s) at fault. */
export class ApiError extends Error {
  readonly kind: ErrorKind;
  readonly problems: Problem[];
  readonly headers: Record<string, string>;
  /** The object the error is about (`details.object_id`), where there is one. */
  readonly objectId: string | undefined;

  constructor(
    kind: ErrorKind,
    msg: string,
    opts: { problems?: Problem[]; headers?: Record<string, string>; objectId?: string } = {},
  ) {
    super(msg);
    this.kind = kind;
    this.problems = opts.problems ?? [];
    this.headers = opts.headers ?? {};
    this.objectId = opts.objectId;
  }

  get status(): number {
    return ERROR_CODES[this.kind].status;
  }

  static invalid(problems: Problem[], objectId?: string): ApiError {
    const unknownOnly = problems.every((p) => p.msg.startsWith("unknown "));
    // A body of 1 MiB can hold 500 000 bad items: report the first ones and count the rest, so the
    // answer stays small (unbounded, it was 60 MB for an 800 KB body).
    const shown = problems.slice(0, MAX_REPORTED_PROBLEMS);
    const more = problems.length - shown.length;
    const summary =
      shown.map((p) => (p.field ? `${p.field}: ${p.msg}` : p.msg)).join("; ") +
      (more > 0 ? `; and ${more} more problems` : "");
    return new ApiError(unknownOnly ? "unknownField" : "validation", summary, { problems: shown, objectId });
  }

  static notFound(what: string): ApiError {
    return new ApiError("notFound", `${what} not found`);
  }
}
