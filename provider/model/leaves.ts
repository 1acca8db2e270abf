/**
 * Secret leaves: the fields of a resource's inputs and outputs that Pulumi state and previews keep
 * secret whatever the program marked, named by Pulumi property path (from the contract's
 * ROUTE_SECRET_PATHS). Only the leaf is secret: a change to the rest of its module shows field by
 * field. Each face marks them its own way (the engine's secret wrapper, `pulumi.secret`); the
 * paths and how to walk them are stated here once.
 */
import { mapPaths, ROUTE_SECRET_PATHS, type ValuePath } from "../../sdk/contract";
import { toCamel } from "./case";
import { isProps, type Props } from "./check";

/** A property path; "*" stands for every key of an object at that step. */
export type LeafPath = ValuePath;

/** An HttpsEdgeRoute's: `webhookVerification.secret`, `oauth.provider.*.clientSecret`, `oidc.clientSecret`. */
export const ROUTE_SECRET_LEAVES: readonly LeafPath[] = ROUTE_SECRET_PATHS.map((path) => path.map(toCamel));

/**
 * `value` with `f` applied to what each of `leaves` reaches (the contract's `mapPaths`), copied
 * along the paths; where a path meets a value it cannot walk into before its end (an unknown, a
 * wrapped secret, an Output: `walkable` says which it can), `f` gets that whole value: the
 * strongest safe answer.
 */
export function mapLeaves(
  value: Props,
  leaves: readonly LeafPath[],
  f: (v: unknown) => unknown,
  walkable: (v: unknown) => v is Props = isProps,
): Props {
  const mapped = mapPaths(value, leaves, (v) => f(v), { walkable, whole: true });
  return isProps(mapped) ? mapped : value;
}

/** How `path` (property names and list indexes) stands to a secret leaf: at or inside one, above one, or apart. */
export function leafRelation(
  path: ReadonlyArray<string | number>,
  leaves: readonly LeafPath[],
): { secret: true } | { secret: false; below: LeafPath[] } {
  const below: LeafPath[] = [];
  for (const leaf of leaves) {
    const n = Math.min(leaf.length, path.length);
    if (!leaf.slice(0, n).every((seg, i) => seg === "*" || seg === path[i])) continue;
    if (path.length >= leaf.length) return { secret: true };
    below.push(leaf.slice(path.length));
  }
  return { secret: false, below };
}
