/**
 * Every limit and fixed vocabulary of the edge API (the contract, and
 * docs/decisions.md#validation), in one place. Nothing here imports anything else of ours.
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

/**
 * The most items each list (and header map) of a request may hold, by field name: the schemas
 * take their bounds from here, and so does the check of a body's bytes before it is parsed (see
 * `bodyShapeProblem`), which knows no more of a body than its field names. A 1 MiB body
 * holds 250,000 items; unbounded, four such bodies at once held the event loop for seconds and
 * took 500 MB (RELIABILITY.md). The bounds are generous for any real configuration: an edge
 * listens on a few host:port pairs, a request carries well under 100 headers (common proxies
 * refuse more), an allow-list of emails or domains may be long.
 */
export const LIST_MAX_ITEMS = {
  hostports: 50,
  ip_policy_ids: 50,
  /** Header maps of the header modules (name → value). */
  add: 100,
  /** Header name lists of the header modules. */
  remove: 100,
  scopes: 100,
  organizations: 100,
  teams: 100,
  authorized_groups: 100,
  allow: 100,
  deny: 100,
  email_addresses: 1000,
  email_domains: 1000,
} as const satisfies Record<string, number>;
/**
 * The most items any other array, and keys any other object, of a request body may hold (an
 * unknown field's included).
 */
export const BODY_MAX_ITEMS = 1000;
/**
 * The most values (objects, arrays, strings, numbers, literals) a request body may hold in all: a
 * route with every module and long lists holds a few thousand. Parsing 250,000 values took 50 to
 * 130 ms of the event loop per body on a loaded 2-core machine.
 */
export const BODY_MAX_VALUES = 20_000;
/** The error message for a list or map over its bound, the same wherever it is checked. */
export const tooManyItemsMessage = (max: number): string => `must hold at most ${max} items`;

/** A key whose list LIST_MAX_ITEMS bounds. */
const isListKey = (key: PropertyKey | undefined): key is keyof typeof LIST_MAX_ITEMS =>
  typeof key === "string" && Object.hasOwn(LIST_MAX_ITEMS, key);
/** The bound on the items of a body's array or object found at `key` (LIST_MAX_ITEMS, else BODY_MAX_ITEMS). */
export const maxItemsAt = (key: PropertyKey | undefined): number =>
  isListKey(key) ? LIST_MAX_ITEMS[key] : BODY_MAX_ITEMS;

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

/** OAuth identity-provider slots, in the contract's order (slot 1 first). */
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
