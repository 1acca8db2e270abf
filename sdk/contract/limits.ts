/**
 * Every limit and fixed vocabulary of the edge API (edge-api.md + gaps.md), in one place.
 * Nothing here imports anything else of ours.
 */

export const DESCRIPTION_MAX_BYTES = 255;
export const METADATA_MAX_BYTES = 4096;
export const NUM_BUCKETS_MIN = 1;
export const NUM_BUCKETS_MAX = 128;
export const UINT32_MAX = 4294967295;
/** Request bodies larger than this are refused with 413. */
export const MAX_BODY_BYTES = 1024 * 1024;
/** Page size of list operations. */
export const PAGE_LIMIT_MAX = 100;
export const PAGE_LIMIT_DEFAULT = 100;
/** An error answer lists at most this many problems (and counts the rest): its size stays bounded. */
export const MAX_REPORTED_PROBLEMS = 100;

/** Identifiers (path parameters, backend and IP policy ids): this character set, 1..64 long. */
export const ID_PATTERN = /^[A-Za-z0-9_]{1,64}$/;

export const ID_PREFIX = {
  httpsEdge: "edghts_",
  route: "edghtsrt_",
  tlsEdge: "edgtls_",
} as const;
/** Server-generated ids are a prefix followed by this many base62 characters. */
export const ID_RANDOM_LENGTH = 27;

export const MATCH_TYPES = ["exact_path", "path_prefix"] as const;
export type MatchType = (typeof MATCH_TYPES)[number];

export const DEFAULT_COOKIE_PREFIX = "edge.";

export const NAMEID_FORMATS = [
  "urn:oasis:names:tc:SAML:2.0:nameid-format:persistent",
  "urn:oasis:names:tc:SAML:2.0:nameid-format:transient",
  "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress",
  "urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified",
] as const;
export const DEFAULT_NAMEID_FORMAT = NAMEID_FORMATS[0];

/** OAuth identity-provider slots, in the order of edge-api.md (slot 1 first). */
export const OAUTH_PROVIDER_KEYS = [
  "github",
  "facebook",
  "microsoft",
  "google",
  "linkedin",
  "gitlab",
  "twitch",
  "amazon",
] as const;

/** The webhook provider that sends no secret (and must not be given one). */
export const SECRETLESS_WEBHOOK_PROVIDER = "sns";

export const WEBHOOK_PROVIDERS = [
  "aftership",
  "airship",
  "alchemy",
  "sns",
  "autodesk",
  "bitbucket",
  "bolt",
  "box",
  "brex",
  "buildkite",
  "calendly",
  "castle",
  "chargify",
  "circleci",
  "clearbit",
  "clerk",
  "coinbase",
  "contentful",
  "docusign",
  "dropbox",
  "facebook_graph_api",
  "facebook_messenger",
  "frameio",
  "github",
  "gitlab",
  "go1",
  "heroku",
  "hostedhooks",
  "hubspot",
  "graphcms",
  "instagram",
  "intercom",
  "jira",
  "launch_darkly",
  "linear",
  "mailchimp",
  "mailgun",
  "microsoft_teams",
  "modern_treasury",
  "mongodb",
  "mux",
  "orb",
  "orbit",
  "pagerduty",
  "pinwheel",
  "plivo",
  "pusher",
  "sendgrid",
  "sentry",
  "shopify",
  "signal_sciences",
  "slack",
  "sonatype",
  "square",
  "stripe",
  "svix",
  "terraform",
  "tiktok",
  "trendmicro_conformity",
  "twilio",
  "twitter",
  "typeform",
  "vmware",
  "webex",
  "whatsapp",
  "worldline",
  "xero",
  "zendesk",
  "zoom",
] as const;
