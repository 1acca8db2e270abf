/**
 * Secrets on the gRPC wire of a packaged provider. The plugin accepts secrets (the framework
 * negotiates it), so secret values reach check/diff/create still wrapped in Pulumi's sentinel
 * object; outputs that must stay secret are sent back wrapped. This is the one place that knows.
 */
import { isProps, type Props } from "../model/check";

const SIG_KEY = "4dabf18193072939515e22adb298388d";
const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";

export const isSecret = (v: unknown): v is { value: unknown } => isProps(v) && v[SIG_KEY] === SECRET_SIG;
export const secret = (value: unknown): Props => ({ [SIG_KEY]: SECRET_SIG, value });

/** The value with every secret wrapper removed, at any depth. */
export function reveal(value: unknown): unknown {
  if (isSecret(value)) return reveal(value.value);
  if (Array.isArray(value)) return value.map(reveal);
  if (isProps(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, reveal(v)]));
  return value;
}

/** Top-level properties holding a secret anywhere inside. */
export function secretProperties(value: unknown): Set<string> {
  const out = new Set<string>();
  const holds = (v: unknown): boolean =>
    isSecret(v) || (Array.isArray(v) ? v.some(holds) : isProps(v) && Object.values(v).some(holds));
  if (isProps(value)) for (const [k, v] of Object.entries(value)) if (holds(v)) out.add(k);
  return out;
}

/** `props` with the named top-level properties wrapped as secrets (absent ones stay absent). */
export function conceal<T extends object>(props: T, keys: Iterable<string>): Props {
  const out: Props = { ...(props as Props) };
  for (const k of keys)
    if (out[k] !== undefined && out[k] !== null && !isSecret(out[k])) out[k] = secret(out[k]);
  return out;
}
