import * as pulumi from "@pulumi/pulumi";
import type { MATCH_TYPES, NAMEID_FORMATS } from "../../sdk/contract";
import { MODULE_PROPERTY, SECRET_MODULES } from "../model/route";
import type { RouteOutputs } from "../model/types";
import { EdgeDynamicResource } from "./glue";

/** How `match` selects requests. */
export type MatchType = (typeof MATCH_TYPES)[number];
/** The SAML 2.0/1.1 name identifier formats the service supports. */
export type NameidFormat = (typeof NAMEID_FORMATS)[number];

type In<T> = pulumi.Input<T>;
type List = In<In<string>[]>;

/** Every module has `enabled`: true applies it to traffic, false disables it. Omitted means true. */
interface Module {
  enabled?: In<boolean>;
}

/** Backend module: the backend that serves the route. */
export interface BackendArgs extends Module {
  /** The backend to use. */
  backendId: In<string>;
}

/** IP restriction module. */
export interface IpRestrictionArgs extends Module {
  /** All IP policies used to check whether a source IP may access the route. At least one; order does not matter. */
  ipPolicyIds: List;
}

/** Circuit breaker module. */
export interface CircuitBreakerArgs extends Module {
  /** Seconds to wait, after the circuit is tripped, before re-evaluating upstream health. */
  trippedDuration?: In<number>;
  /** Seconds of the statistical rolling window in which metrics are kept. */
  rollingWindow?: In<number>;
  /** Number of buckets into which metrics are kept. 1 to 128. */
  numBuckets?: In<number>;
  /** Requests in a rolling window that trip the circuit. Useful when traffic volume is low. */
  volumeThreshold?: In<number>;
  /** Error rate that trips the circuit: a fraction between 0 and 1.0, not a percentage of 100. */
  errorThresholdPercentage?: In<number>;
}

/** Compression module. */
export type CompressionArgs = Module;

/** Request or response headers module. Header names are kept exactly as written. */
export interface HeadersArgs extends Module {
  /** Header name → value, injected (into the request to upstream, or the response to the client). */
  add?: In<Record<string, In<string>>>;
  /** Header names removed. */
  remove?: List;
}

/** Webhook verification module. Stored as a secret. */
export interface WebhookVerificationArgs extends Module {
  /** The webhook provider that sends webhooks to this route (e.g. "github", "stripe", "sns"). Case-insensitive. */
  provider: In<string>;
  /** Secret used to validate requests from the provider. Required for every provider except "sns", where it is not allowed. */
  secret?: In<string>;
}

/** Session settings shared by OAuth, SAML and OIDC. */
interface SessionArgs {
  /** When true, authentication is not enforced on HTTP OPTIONS requests (needed for CORS). */
  optionsPassthrough?: In<boolean>;
  /** Prefix of the session cookie. Default "edge.". */
  cookiePrefix?: In<string>;
  /** Seconds of inactivity after which the user must authenticate again. */
  inactivityTimeout?: In<number>;
  /** Seconds of maximum duration of an authenticated session. */
  maximumDuration?: In<number>;
}

/** An OAuth identity provider. Without clientId/clientSecret the service's managed app is used. */
export interface OAuthProviderArgs {
  /** Client ID of your own OAuth app. Requires clientSecret. */
  clientId?: In<string>;
  /** Client secret of your own OAuth app. Requires clientId. */
  clientSecret?: In<string>;
  /** Provider-specific scopes; only with your own app. */
  scopes?: List;
  /** Email addresses (lowercase) of users allowed access. */
  emailAddresses?: List;
  /** Email domains (lowercase) of users allowed access. */
  emailDomains?: List;
}

/** GitHub additionally filters by team and organization. */
export interface OAuthGithubArgs extends OAuthProviderArgs {
  /** Teams as "<org_slug>/<team_slug>"; a member of any is allowed. */
  teams?: List;
  /** Organization slugs; a member of any is allowed. */
  organizations?: List;
}

/** OAuth module. Stored as a secret. Exactly one identity provider. */
export interface OAuthArgs extends Module, SessionArgs {
  provider: In<{
    github?: In<OAuthGithubArgs>;
    facebook?: In<OAuthProviderArgs>;
    microsoft?: In<OAuthProviderArgs>;
    google?: In<OAuthProviderArgs>;
    linkedin?: In<OAuthProviderArgs>;
    gitlab?: In<OAuthProviderArgs>;
    twitch?: In<OAuthProviderArgs>;
    amazon?: In<OAuthProviderArgs>;
  }>;
  /** Seconds after which user state is refreshed from the identity provider and authorization rechecked. */
  authCheckInterval?: In<number>;
}

/** SAML module. */
export interface SamlArgs extends Module, SessionArgs {
  /** Full XML IdP EntityDescriptor. */
  idpMetadata: In<string>;
  /** When true, the IdP must prompt for credentials on each redirect for authentication, even if the user has a valid IdP session. */
  forceAuthn?: In<boolean>;
  /** When true, the IdP may start a login directly (it should set RelayState to the target URL). */
  allowIdpInitiated?: In<boolean>;
  /** When present, only members of one of the listed groups may access the route. */
  authorizedGroups?: List;
  /** Name identifier format the service expects in assertions. Default `urn:oasis:names:tc:SAML:2.0:nameid-format:persistent`. */
  nameidFormat?: In<NameidFormat>;
}

/** OIDC module. Stored as a secret. */
export interface OidcArgs extends Module, SessionArgs {
  /** URL of the OpenID provider: the base URL for discovery. Must be https. */
  issuer: In<string>;
  /** Client ID of the OIDC app (also the audience). */
  clientId: In<string>;
  /** Client secret of the OIDC app. */
  clientSecret: In<string>;
  /** Scopes requested from the identity provider. */
  scopes?: List;
}

/** Websocket-to-TCP converter module. */
export type WebsocketTcpConverterArgs = Module;

/** User agent filter module. */
export interface UserAgentFilterArgs extends Module {
  allow?: List;
  deny?: List;
}

/** Traffic policy module. */
export interface TrafficPolicyArgs extends Module {
  /** The traffic policy to apply to the route's traffic. */
  value: In<string>;
}

/**
 * A route of an HTTPS edge. A module given here is managed whole: changing any field of it
 * replaces that module on the service (PATCH), removing it deletes it, and modules never
 * given are left alone.
 */
export interface HttpsEdgeRouteArgs {
  /** The HTTPS edge that owns the route. Changing it replaces the route. */
  edgeId: In<string>;
  /** How `match` selects requests: "exact_path" or "path_prefix". */
  matchType: In<MatchType>;
  /** Route selector: a path, a host, or a host followed by a path. */
  match: In<string>;
  /** Human-readable text. At most 255 bytes. */
  description?: In<string>;
  /** Arbitrary machine-readable user data. At most 4096 bytes. */
  metadata?: In<string>;
  backend?: In<BackendArgs>;
  ipRestriction?: In<IpRestrictionArgs>;
  circuitBreaker?: In<CircuitBreakerArgs>;
  compression?: In<CompressionArgs>;
  requestHeaders?: In<HeadersArgs>;
  responseHeaders?: In<HeadersArgs>;
  webhookVerification?: In<WebhookVerificationArgs>;
  /** At most one of oauth, oidc and saml. Switching between them never exposes the backend unauthenticated. */
  oauth?: In<OAuthArgs>;
  saml?: In<SamlArgs>;
  oidc?: In<OidcArgs>;
  websocketTcpConverter?: In<WebsocketTcpConverterArgs>;
  userAgentFilter?: In<UserAgentFilterArgs>;
  trafficPolicy?: In<TrafficPolicyArgs>;
  /**
   * Adopt a route that already exists on the edge with the same matchType and match, instead
   * of failing: it is brought to this configuration in place, not recreated.
   */
  adopt?: In<boolean>;
}

/** Outputs of a route's modules: canonical (every default filled), absent when not configured. */
type Out<P extends keyof RouteOutputs> = pulumi.Output<RouteOutputs[P]>;

/** The SAML module as read back: its inputs plus what the service computes. */
export type SamlOutput = NonNullable<RouteOutputs["saml"]>;

const MODULES = Object.values(MODULE_PROPERTY);
const SECRETS = SECRET_MODULES.map((m) => MODULE_PROPERTY[m]);

/**
 * A route of an HTTPS edge. A module given here is managed whole: changing any field of it
 * replaces that module on the service (PATCH), removing it deletes it with its own DELETE, and
 * modules never given are left alone. Modules that carry a secret are stored encrypted.
 */
export class HttpsEdgeRoute extends EdgeDynamicResource {
  declare readonly edgeId: pulumi.Output<string>;
  /** The route's id on the service (also the resource id). */
  declare readonly routeId: pulumi.Output<string>;
  declare readonly matchType: pulumi.Output<MatchType>;
  declare readonly match: pulumi.Output<string>;
  declare readonly description: pulumi.Output<string>;
  declare readonly metadata: pulumi.Output<string>;
  /** URI of the route as an API resource. */
  declare readonly uri: pulumi.Output<string>;
  /** RFC 3339 creation time. */
  declare readonly createdAt: pulumi.Output<string>;
  declare readonly backend: Out<"backend">;
  declare readonly ipRestriction: Out<"ipRestriction">;
  declare readonly circuitBreaker: Out<"circuitBreaker">;
  declare readonly compression: Out<"compression">;
  declare readonly requestHeaders: Out<"requestHeaders">;
  declare readonly responseHeaders: Out<"responseHeaders">;
  declare readonly webhookVerification: Out<"webhookVerification">;
  declare readonly oauth: Out<"oauth">;
  declare readonly saml: Out<"saml">;
  declare readonly oidc: Out<"oidc">;
  declare readonly websocketTcpConverter: Out<"websocketTcpConverter">;
  declare readonly userAgentFilter: Out<"userAgentFilter">;
  declare readonly trafficPolicy: Out<"trafficPolicy">;

  constructor(name: string, args: HttpsEdgeRouteArgs, opts?: pulumi.CustomResourceOptions) {
    const props: Record<string, unknown> = { description: undefined, metadata: undefined };
    for (const m of MODULES) props[m] = undefined;
    Object.assign(props, args, { uri: undefined, createdAt: undefined, routeId: undefined });
    // Secrets never reach the state in plaintext, whether or not the program marked them.
    for (const m of SECRETS) if (args?.[m] !== undefined) props[m] = pulumi.secret(args[m]);
    super("httpsEdgeRoute", "HttpsEdgeRoute", name, props, {
      ...opts,
      additionalSecretOutputs: [...(opts?.additionalSecretOutputs ?? []), ...SECRETS],
    });
  }

  /** Looks up an existing route by id (read-only in this stack). */
  static get(
    name: string,
    id: pulumi.Input<pulumi.ID>,
    state: { edgeId: pulumi.Input<string> },
    opts?: pulumi.CustomResourceOptions,
  ): HttpsEdgeRoute {
    return new HttpsEdgeRoute(name, { edgeId: state.edgeId } as HttpsEdgeRouteArgs, { ...opts, id });
  }
}
