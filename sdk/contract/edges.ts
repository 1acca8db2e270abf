/** HTTPS and TLS edges, and the TLS edge's IP restriction module. */
import { z } from "zod";
import { LIST_MAX_ITEMS, tooManyItemsMessage } from "./limits";
import { ipPolicyMutateSchema, ipPolicyResponseSchema } from "./modules";
import { descriptionSchema, metadataSchema, routeSchema } from "./routes";
import { keptText } from "./text";

const HOSTPORT =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?:(\d{1,5})$/;
/**
 * A hostport's one spelling, the natural key of the edge serving it (docs/decisions.md#hostports):
 * the host in lower case (DNS names compare without regard to case), the port in decimal without
 * leading zeros. `Example.COM:0443` is `example.com:443`.
 */
export function canonicalHostport(hostport: string): string {
  const at = hostport.lastIndexOf(":");
  const port = hostport.slice(at + 1);
  if (at < 0 || !/^\d+$/.test(port)) return hostport.toLowerCase();
  return `${hostport.slice(0, at).toLowerCase()}:${Number(port)}`;
}

/** A hostport, taken in its one spelling (`canonicalHostport`): what is stored, answered and compared. */
export const hostportSchema = keptText({ error: "must be a string" })
  .refine(
    (s) => {
      const m = HOSTPORT.exec(s);
      return m !== null && Number(m[1]) >= 1 && Number(m[1]) <= 65535;
    },
    { error: 'must have the form "host:port", e.g. "example.com:443"' },
  )
  .overwrite(canonicalHostport);

/** POST /edges/https and POST /edges/tls. */
export const edgeCreateSchema = z.strictObject({
  description: descriptionSchema.default("").describe(descriptionSchema.description!),
  metadata: metadataSchema.default("").describe(metadataSchema.description!),
  hostports: z
    .array(hostportSchema, { error: "must be a list of host:port strings" })
    .max(LIST_MAX_ITEMS.hostports, { error: tooManyItemsMessage(LIST_MAX_ITEMS.hostports) })
    .superRefine((hostports, ctx) => {
      // Each is in its one spelling already: "A.com:443" and "a.com:0443" are one hostport.
      const seen = new Set<string>();
      hostports.forEach((h, i) => {
        if (seen.has(h)) ctx.addIssue({ code: "custom", path: [i], message: "appears twice" });
        seen.add(h);
      });
    })
    .default([])
    .describe(
      `Host and port pairs the edge listens on, e.g. "example.com:443". A hostport belongs to one edge at a time: a create naming one that another edge has is a 409. At most ${LIST_MAX_ITEMS.hostports}.`,
    ),
});
export type EdgeCreate = z.input<typeof edgeCreateSchema>;

const edgeFields = {
  id: z.string(),
  uri: z.string(),
  created_at: z.string(),
  description: z.string(),
  metadata: z.string(),
  hostports: z.array(z.string()),
};
export const httpsEdgeSchema = z.object({ ...edgeFields, routes: z.array(routeSchema) });
export type HttpsEdge = z.output<typeof httpsEdgeSchema>;

/** PUT /edges/tls/{id}/ip_restriction: `enabled` (default true) and `ip_policy_ids`. */
export const tlsIpRestrictionMutateSchema = ipPolicyMutateSchema;
export type TlsIpRestrictionMutate = z.input<typeof tlsIpRestrictionMutateSchema>;
export const tlsIpRestrictionSchema = ipPolicyResponseSchema;
export type TlsIpRestriction = z.output<typeof tlsIpRestrictionSchema>;

export const tlsEdgeSchema = z.object({ ...edgeFields, ip_restriction: tlsIpRestrictionSchema.nullable() });
export type TlsEdge = z.output<typeof tlsEdgeSchema>;

const page = { uri: z.string(), next_page_uri: z.string().nullable() };
export const httpsEdgeListSchema = z.object({ https_edges: z.array(httpsEdgeSchema), ...page });
export const tlsEdgeListSchema = z.object({ tls_edges: z.array(tlsEdgeSchema), ...page });
export type HttpsEdgeList = z.output<typeof httpsEdgeListSchema>;
export type TlsEdgeList = z.output<typeof tlsEdgeListSchema>;
