/**
 * Valid request bodies of the contract, random within its rules, read off its zod schemas
 * (zod-arbitrary.ts): a field added to a schema is generated without anyone listing it. The
 * hooks are the few places where random values would almost never be valid.
 */
import fc from "fast-check";
import type { z } from "zod";
import { byModule, ROUTE_MODULES, type RouteModuleName, WEBHOOK_PROVIDERS } from "../../sdk/contract";
import { arbitraryOf, exactlyOneSlot, type Hook } from "./zod-arbitrary";

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** A SAML IdP's metadata (an EntityDescriptor), valid for the module's `idp_metadata`. */
export const IDP_METADATA =
  '<?xml version="1.0" encoding="UTF-8"?>\n<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" ' +
  'entityID="https://idp.example.com/metadata"><md:IDPSSODescriptor protocolSupportEnumeration=' +
  '"urn:oasis:names:tc:SAML:2.0:protocol"/></md:EntityDescriptor>';

/**
 * Where random values would almost never be valid, how to make one; everything else (every
 * field, its bounds, its cross-field rules) is read off the contract's schemas, so a field added
 * there is sent here too (zod-arbitrary.ts).
 */
export const HOOKS: Record<string, Hook> = {
  // "exactly one identity provider": one slot, the ordinary way.
  "oauth.provider": exactlyOneSlot,
  "saml.idp_metadata": fc.constant(IDP_METADATA),
  "oidc.issuer": fc.webUrl({ validSchemes: ["https"], size: "xsmall" }),
  // Matched case-insensitively: send some upper case too.
  "webhook_verification.provider": fc
    .tuple(fc.constantFrom(...WEBHOOK_PROVIDERS), fc.boolean())
    .map(([p, upper]) => (upper ? p.toUpperCase() : p)),
  // A hostport belongs to one edge at a time, and appears once in a request: distinct, and named
  // at random so that edges a test keeps do not claim each other's.
  hostports: fc.uniqueArray(
    fc
      .tuple(fc.stringMatching(/^[a-z][a-z0-9]{0,9}$/), fc.constantFrom("example.com", "b.example.org", "x"))
      .chain(([label, domain]) => fc.constantFrom(443, 8443, 1).map((port) => `${label}.${domain}:${port}`)),
    { maxLength: 3, selector: (h) => h.toLowerCase() },
  ),
};

export const bodyOf = (schema: z.ZodType, root = "") =>
  arbitraryOf(schema, { hooks: HOOKS }, root) as fc.Arbitrary<Record<string, Json>>;

/** A valid request body for each route module (random within the rules), from its schema. */
export const MODULE_BODY = byModule<Record<RouteModuleName, fc.Arbitrary<Record<string, Json>>>>((m) =>
  bodyOf(ROUTE_MODULES[m].request, m),
);
