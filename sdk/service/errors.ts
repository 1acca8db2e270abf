import { ERROR_CODES, type ErrorKind, type Problem } from "../contract";

/** An error the service answers with: a kind from the catalogue, a message, maybe the field(s) at fault. */
export class ApiError extends Error {
  readonly kind: ErrorKind;
  readonly problems: Problem[];
  readonly headers: Record<string, string>;

  constructor(
    kind: ErrorKind,
    msg: string,
    opts: { problems?: Problem[]; headers?: Record<string, string> } = {},
  ) {
    super(msg);
    this.kind = kind;
    this.problems = opts.problems ?? [];
    this.headers = opts.headers ?? {};
  }

  get status(): number {
    return ERROR_CODES[this.kind].status;
  }

  static invalid(problems: Problem[]): ApiError {
    const unknownOnly = problems.every((p) => p.msg.startsWith("unknown field"));
    const summary = problems.map((p) => (p.field ? `${p.field}: ${p.msg}` : p.msg)).join("; ");
    return new ApiError(unknownOnly ? "unknownField" : "validation", summary, { problems });
  }

  static notFound(what: string): ApiError {
    return new ApiError("notFound", `${what} not found`);
  }
}
