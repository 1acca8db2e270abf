/**
 * The resource Args interfaces are generated from the packaged schema (provider/resources/args.ts),
 * and pinned here to the contract's request shapes: a field added, removed, renamed, made optional or given another
 * type (an enum included) in either place fails to compile, in `npm run lint` (tsc) and here
 * (the test runs the compiler on this file, with a drifted pin beside it that must fail). Null
 * means "not configured", the same as absent.
 */
import * as path from "node:path";
import type * as pulumi from "@pulumi/pulumi";
import ts from "typescript";
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
export type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
export type Expect<T extends true> = T;

/** What a program may write for a wire shape: camelCase keys, null dropped (null means absent). */
type Program<T> = T extends readonly (infer E)[]
  ? Program<E>[]
  : T extends object
    ? { [K in keyof T]: Program<Exclude<T[K], null>> }
    : T;

type ProgramOf<T> = Program<Camelize<T>>;
export type Written<T> = pulumi.Unwrap<T>;

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

/**
 * The compiler's errors in this file and in a control module beside it (in memory), one program.
 * Run here rather than left to ts-jest, which only transpiles under `npm run test:unit`.
 */
function typeErrors(control: string): { here: string[]; control: string[] } {
  const root = path.join(__dirname, "../..");
  const config = ts.readConfigFile(path.join(root, "tsconfig.json"), (f) => ts.sys.readFile(f));
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, root);
  const controlFile = path.join(__dirname, "args-pin-control.ts");
  const host = ts.createCompilerHost(options);
  const read = host.getSourceFile.bind(host);
  host.getSourceFile = (name, lang, ...rest) =>
    name === controlFile ? ts.createSourceFile(name, control, lang) : read(name, lang, ...rest);
  const exists = host.fileExists.bind(host);
  host.fileExists = (name) => name === controlFile || exists(name);
  const program = ts.createProgram([__filename, controlFile], { ...options, noEmit: true }, host);
  const errors = (file: string) =>
    ts
      .getPreEmitDiagnostics(program, program.getSourceFile(file))
      .map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
  return { here: errors(__filename), control: errors(controlFile) };
}

test("the Args interfaces match the contract (checked by the compiler), and a drifted pin fails", () => {
  // The control pins `adopt` as required where the Args have it optional: the kind of drift the
  // pins exist to catch, so it must not compile.
  const { here, control } = typeErrors(`
    import type { HttpsEdgeRouteArgs } from "../../provider/resources/args";
    import type { Equal, Expect, Written } from "./args.test";
    export type Drifted = Expect<Equal<Written<Pick<HttpsEdgeRouteArgs, "adopt">>, { adopt: boolean }>>;
  `);
  expect(here).toEqual([]);
  expect(control).toEqual([expect.stringContaining("does not satisfy the constraint 'true'")]);
}, 300_000);
