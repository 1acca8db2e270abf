/**
 * The resource Args interfaces are generated from the packaged schema (provider/resources/args.ts),
 * and pinned here to the contract's request shapes: a field added, removed, renamed, made optional or given another
 * type (an enum included) in either place fails to compile, in `npm run lint` (tsc) and here
 * (ts-jest type-checks this file). Null means "not configured", the same as absent.
 */
import type * as pulumi from "@pulumi/pulumi";
import type { z } from "zod";
import type { Camelize, ModuleProperty } from "../../provider/model/types";
import type { EdgeArgs } from "../../provider/resources/edges";
import type { HttpsEdgeRouteArgs, TlsEdgeIpRestrictionArgs } from "../../provider/resources/args";
import type {
  edgeCreateSchema,
  ModuleRequestInput,
  RouteCreate,
  RouteModuleName,
  tlsIpRestrictionMutateSchema,
} from "../../sdk/contract";

/** Exact type equality (not mutual assignability). */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Expect<T extends true> = T;

/** What a program may write for a wire shape: camelCase keys, null dropped (null means absent). */
type Program<T> = T extends readonly (infer E)[]
  ? Program<E>[]
  : T extends object
    ? { [K in keyof T]: Program<Exclude<T[K], null>> }
    : T;

type ProgramOf<T> = Program<Camelize<T>>;
type Written<T> = pulumi.Unwrap<T>;

type RouteModuleArgs = Pick<HttpsEdgeRouteArgs, ModuleProperty>;
type RouteModuleWire = { [M in RouteModuleName as ModuleProperty<M>]?: ModuleRequestInput<M> };

export type Pins = [
  Expect<Equal<Written<EdgeArgs>, ProgramOf<z.input<typeof edgeCreateSchema>>>>,
  Expect<
    Equal<
      Written<Omit<HttpsEdgeRouteArgs, "edgeId" | "adopt" | ModuleProperty>>,
      ProgramOf<Omit<RouteCreate, RouteModuleName>>
    >
  >,
  Expect<Equal<Written<RouteModuleArgs>, ProgramOf<RouteModuleWire>>>,
  Expect<
    Equal<
      Written<Omit<TlsEdgeIpRestrictionArgs, "edgeId" | "adopt">>,
      ProgramOf<z.input<typeof tlsIpRestrictionMutateSchema>>
    >
  >,
  // The inputs that are not wire fields.
  Expect<Equal<Written<Pick<HttpsEdgeRouteArgs, "edgeId" | "adopt">>, { edgeId: string; adopt?: boolean }>>,
  Expect<
    Equal<Written<Pick<TlsEdgeIpRestrictionArgs, "edgeId" | "adopt">>, { edgeId: string; adopt?: boolean }>
  >,
];

test("the Args interfaces match the contract (checked by the compiler)", () => {
  const pinned: Pins["length"] = 6;
  expect(pinned).toBe(6);
});
