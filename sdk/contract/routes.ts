/** HTTPS edge routes: create/update request bodies, the route resource, its list page. */
import { z } from "zod";
import { DESCRIPTION_MAX_BYTES, MATCH_TYPES, METADATA_MAX_BYTES } from "./limits";
import {
  authModuleProblem,
  byModule,
  ROUTE_MODULE_NAMES,
  ROUTE_MODULES,
  type RouteModuleName,
} from "./modules";
import { keptText } from "./text";

const utf8 = new TextEncoder();
/** A string limited in UTF-8 bytes (not characters), as the contract's limits are. */
export const boundedText = (maxBytes: number) =>
  keptText({ error: "must be a string" }).refine((s) => utf8.encode(s).length <= maxBytes, {
    error: `must be at most ${maxBytes} bytes of UTF-8`,
  });

export const descriptionSchema = boundedText(DESCRIPTION_MAX_BYTES).describe(
  `Human-readable text. At most ${DESCRIPTION_MAX_BYTES} bytes of UTF-8.`,
);
export const metadataSchema = boundedText(METADATA_MAX_BYTES).describe(
  `Arbitrary machine-readable user data. At most ${METADATA_MAX_BYTES} bytes of UTF-8.`,
);
export const matchTypeSchema = z
  .enum(MATCH_TYPES, { error: `must be one of ${MATCH_TYPES.join(", ")}` })
  .describe(`How \`match\` selects requests: ${MATCH_TYPES.map((t) => `"${t}"`).join(" or ")}.`);
export const matchSchema = keptText({ error: "is required (a path, a host, or a host followed by a path)" })
  .min(1, { error: "must not be empty" })
  .describe("Route selector: a path, a host, or a host followed by a path.");

type ModuleFields<Mode extends "request"> = {
  [M in RouteModuleName]: z.ZodOptional<z.ZodNullable<(typeof ROUTE_MODULES)[M][Mode]>>;
};
const moduleRequestFields = byModule<ModuleFields<"request">>((name) =>
  ROUTE_MODULES[name].request.nullable().optional(),
);

const routeCreateFields = {
  match_type: matchTypeSchema,
  match: matchSchema,
  description: descriptionSchema.default(""),
  metadata: metadataSchema.default(""),
  ...moduleRequestFields,
};
const oneAuthModule = (route: Partial<Record<RouteModuleName, unknown>>, ctx: z.RefinementCtx) => {
  const problem = authModuleProblem(ROUTE_MODULE_NAMES.filter((m) => route[m] != null));
  if (problem) ctx.addIssue({ code: "custom", path: [problem.field], message: problem.msg });
};

/**
 * A route or module body may repeat an identifier of its path, as the real API's published
 * clients do (docs/decisions.md#compatibility): equal to the path → ignored; different → 400
 * (`pathEchoProblems`, checked where the path is known).
 */
export const pathEchoSchema = (name: string) =>
  keptText({ error: "must be a string (the identifier of the path, or omit it)" })
    .optional()
    .describe(`Optional; repeats the path's \`${name}\`. Equal to it → ignored; different → 400.`);

/** POST /edges/https/{edge_id}/routes, as the provider and the client build it. `match_type` and `match` are required; one auth module at most. */
export const routeCreateSchema = z.strictObject(routeCreateFields).superRefine(oneAuthModule);
export type RouteCreate = z.input<typeof routeCreateSchema>;
export type RouteCreateCanonical = z.output<typeof routeCreateSchema>;

/** POST /edges/https/{edge_id}/routes as the service accepts it: `routeCreateSchema`, plus the path's `edge_id` repeated. */
export const routeCreateBodySchema = z
  .strictObject({ edge_id: pathEchoSchema("edge_id"), ...routeCreateFields })
  .superRefine(oneAuthModule);

/**
 * docs/decisions.md#patch: `""` for `match_type` or `match` means "unchanged" (the real API's
 * clients send empty strings for what the caller did not give; neither can legitimately be empty).
 */
const unchangedWhenEmpty = <S extends z.ZodType<string>>(schema: S) =>
  z
    .union([schema, z.literal("").transform(() => undefined)])
    .optional()
    .describe(`${schema.description ?? ""} On update, "" (or omitted) leaves it unchanged.`.trim());

/**
 * PATCH /edges/https/{edge_id}/routes/{id}. Every field optional; a present module replaces
 * that module whole; an absent or null module is left unchanged. `edge_id` and `id` may repeat
 * the path's.
 */
export const routeUpdateSchema = z.strictObject({
  edge_id: pathEchoSchema("edge_id"),
  id: pathEchoSchema("id"),
  match_type: unchangedWhenEmpty(matchTypeSchema),
  match: unchangedWhenEmpty(matchSchema),
  description: descriptionSchema.optional(),
  metadata: metadataSchema.optional(),
  ...moduleRequestFields,
});
export type RouteUpdate = z.input<typeof routeUpdateSchema>;

type ModuleResponseFields = {
  [M in RouteModuleName]: z.ZodNullable<(typeof ROUTE_MODULES)[M]["response"]>;
};
const moduleResponseFields = byModule<ModuleResponseFields>((name) =>
  ROUTE_MODULES[name].response.nullable(),
);

/** The route resource, as returned by create, get, update and list. Unconfigured modules are null. */
export const routeSchema = z.object({
  id: z.string(),
  edge_id: z.string(),
  created_at: z.string(),
  uri: z.string(),
  match_type: matchTypeSchema,
  match: z.string(),
  description: z.string(),
  metadata: z.string(),
  ...moduleResponseFields,
});
export type Route = z.output<typeof routeSchema>;

export const routeListSchema = z.object({
  routes: z.array(routeSchema),
  uri: z.string(),
  next_page_uri: z.string().nullable(),
});
export type RouteList = z.output<typeof routeListSchema>;
