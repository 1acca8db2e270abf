/**
 * Secrets on the engine's gRPC wire, for both faces: Pulumi's secret wrapper object. The plugin
 * accepts secrets (the framework negotiates it), so secret values reach check/diff/create still
 * wrapped. The dynamic provider host accepts none: the engine unwraps them before calling it, yet
 * keeps a wrapper the host sends back (pkg/resource/plugin/provider_plugin.go unmarshals the
 * results of Check, Create, Read and Update with KeepSecrets). So both faces send the secret
 * leaves back wrapped, and the state holds them encrypted. This is the one place that knows the
 * wrapper.
 */
import { isProps, type Props } from "../model/check";
import { type LeafPath, mapLeaves } from "../model/leaves";

const SIG_KEY = "4dabf18193072939515e22adb298388d";
const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";

/** Whether `v` is the engine's wrapper of a secret value (what the program marked secret). */
export const isSecretWrapper = (v: unknown): v is { value: unknown } =>
  isProps(v) && v[SIG_KEY] === SECRET_SIG;
export const secret = (value: unknown): Props => ({ [SIG_KEY]: SECRET_SIG, value });

/** The value with every secret wrapper removed, at any depth. */
export function reveal(value: unknown): unknown {
  if (isSecretWrapper(value)) return reveal(value.value);
  if (Array.isArray(value)) return value.map(reveal);
  if (isProps(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, reveal(v)]));
  return value;
}

/**
 * A value of `pulumi stack export --show-secrets` with its secrets as the engine's wire holds them:
 * the export writes a secret as the signature with its value JSON-encoded in `plaintext`.
 */
export function fromExported(value: unknown): unknown {
  if (isProps(value) && value[SIG_KEY] === SECRET_SIG && typeof value.plaintext === "string") {
    return secret(fromExported(JSON.parse(value.plaintext)));
  }
  if (Array.isArray(value)) return value.map(fromExported);
  if (isProps(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fromExported(v)]));
  return value;
}

const wrapped = (v: unknown): unknown => (isSecretWrapper(v) ? v : secret(v));
const walkable = (v: unknown): v is Props => isProps(v) && !isSecretWrapper(v);

/** `props` with the named top-level properties wrapped as secrets (absent ones stay absent). */
export function conceal<T extends object>(props: T, keys: Iterable<string>): Props {
  const out: Props = { ...(props as Props) };
  for (const k of keys) if (out[k] !== undefined && out[k] !== null) out[k] = wrapped(out[k]);
  return out;
}

/** `props` with its secret leaves wrapped (model/leaves: a value a leaf path cannot walk into is wrapped whole). */
export const concealLeaves = (props: object, leaves: readonly LeafPath[]): Props =>
  mapLeaves({ ...props }, leaves, wrapped, walkable);

/**
 * `outs` secret where `given` was, as the engine does for providers that take no secrets
 * (annotateSecrets): property by property where both are objects, else the whole value of a
 * property whose given value holds a secret anywhere. A secret nested in a module stays a leaf.
 */
export function keepSecretsOf(outs: Props, given: unknown): Props {
  if (!isProps(given)) return outs;
  const out: Props = { ...outs };
  for (const [k, g] of Object.entries(given)) {
    const o = out[k];
    if (o === undefined || o === null) continue;
    if (walkable(o) && walkable(g)) out[k] = keepSecretsOf(o, g);
    else if (holdsSecret(g)) out[k] = wrapped(o);
  }
  return out;
}

const holdsSecret = (v: unknown): boolean =>
  isSecretWrapper(v) ||
  (Array.isArray(v) ? v.some(holdsSecret) : isProps(v) && Object.values(v).some(holdsSecret));
