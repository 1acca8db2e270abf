/**
 * No module-level mutable state in the package's code (`sdk/`, `service/`, `provider/`,
 * `commands/`, `index.ts`): what changes behaviour lives in an object made where the process
 * starts and passed in (the provider's ProviderProcess, a command's engine, a service's store), so
 * no signature hides it and tests make their own instead of resetting modules. The compiler's
 * parser lists every top-level `let`/`var`, every top-level `const` holding a container or an
 * object made with `new` (unless its type says it is read-only), every top-level array or object
 * literal the file mutates, every top-level `const` set by a call that makes state (a buffer, or a
 * function of the scanned code that returns a container or a closure over one: `once`'s memo), and
 * every patch of a prototype; each must be in ALLOWED with its reason.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import * as ts from "typescript";

const ROOT = join(__dirname, "..", "..");
const FOLDERS = ["sdk", "service", "provider", "commands"];

/** `file: name` → why it may stay: caches that cannot change behaviour, hooks the runtime needs. */
const ALLOWED = new Map<string, string>([
  ["provider/client.ts: clients", "a cache of clients by their settings: equal settings, equal clients"],
  [
    "provider/engine/pulumi-internals.ts: resolved",
    "a cache of the engine's modules as `require` resolved them",
  ],
  [
    "provider/resources/glue.ts: deployments",
    "per deployment, keyed by the engine's monitor: a program's resource constructors are handed no context",
  ],
  [
    "provider/runtime.ts: host",
    "the dynamic provider host's one ProviderProcess, made where that process starts",
  ],
  [
    "sdk/contract/text.ts: readingStored",
    "set only for the span of a synchronous parse (readStored), so it cannot reach another call",
  ],
  [
    "sdk/transport/tls.ts: fetches",
    "a cache of fetch functions by TLS settings: equal settings, equal fetch",
  ],
  ["service/audit.ts: changesJson", "a memo of each change's JSON text, keyed by the change object"],
  [
    "service/embedded.ts: apps",
    "the in-process service's open database per data directory (one writer per file)",
  ],
  ["service/http/operation-routes.ts: COUNTS", "keyed by the request object, dropped with it"],
  ["service/ids.ts: poolOffset", "where the next identifier's random bytes start in a pool of random bytes"],
  [
    "service/ids.ts: pool",
    "random bytes drawn for identifiers, refilled when used up: no byte is given twice",
  ],
  ["service/store/statements.ts: tableRows", "statement texts built once per table (a `once` memo)"],
  ["service/store/statements.ts: anyRow", "statement texts built once per table (a `once` memo)"],
  ["service/store/statements.ts: continueSequence", "statement texts built once per table (a `once` memo)"],
  ["service/store/statements.ts: inserts", "statement texts built once per table"],
  ["service/store/statements.ts: withEvents", "statement texts built once per table"],
  ["service/store/statements.ts: auditLists", "statement texts built once per filter combination"],
  [
    "service/store/store-postgres-conn.ts: preparedInline",
    "which statements a connection has prepared, keyed by it",
  ],
  ["service/store/store-sqlite.ts: NO_SECRETS", "an empty key ring: it holds nothing to change"],
  ["service/store/store-steps.ts: PLAIN", "an empty key ring: it holds nothing to change"],
  [
    "provider/plugin/serve.ts: grpc.Server.prototype.addService",
    "the plugin's gRPC server is made inside @pulumi/pulumi/provider's main, which takes no handlers: patched once, where the plugin process starts",
  ],
  [
    "commands/drift/lock.ts: places",
    "a cache of where each environment's backend keeps its locks, keyed by it",
  ],
]);

/** Built-ins whose instances hold no state a caller can see change. */
const STATELESS = new Set(["RegExp", "TextEncoder", "TextDecoder"]);
const MUTATORS = /^(push|pop|shift|unshift|splice|sort|reverse|fill|copyWithin|set|add|delete|clear)$/;

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? files(join(dir, e.name))
      : e.name.endsWith(".ts") && !e.name.endsWith(".d.ts")
        ? [join(dir, e.name)]
        : [],
  );
}

const unwrap = (e: ts.Expression): ts.Expression =>
  ts.isAsExpression(e) || ts.isSatisfiesExpression(e) || ts.isParenthesizedExpression(e)
    ? unwrap(e.expression)
    : e;

/** The identifier an access chain starts at (`a.b[c].d` → `a`). */
function rootOf(e: ts.Expression): string | undefined {
  const x = unwrap(e);
  if (ts.isIdentifier(x)) return x.text;
  if (ts.isPropertyAccessExpression(x) || ts.isElementAccessExpression(x)) return rootOf(x.expression);
  return undefined;
}

/** The names of `source` that are written through: `x.a = …`, `x[k] = …`, `delete x.a`, `x.push(…)`. */
function mutatedNames(source: ts.SourceFile): Set<string> {
  const names = new Set<string>();
  const visit = (n: ts.Node): void => {
    if (
      ts.isBinaryExpression(n) &&
      n.operatorToken.kind >= ts.SyntaxKind.FirstAssignment &&
      n.operatorToken.kind <= ts.SyntaxKind.LastAssignment
    ) {
      const left = unwrap(n.left);
      if (ts.isPropertyAccessExpression(left) || ts.isElementAccessExpression(left)) {
        const root = rootOf(left);
        if (root) names.add(root);
      }
    }
    if (ts.isDeleteExpression(n)) {
      const root = rootOf(n.expression);
      if (root) names.add(root);
    }
    if (
      ts.isCallExpression(n) &&
      ts.isPropertyAccessExpression(n.expression) &&
      MUTATORS.test(n.expression.name.text)
    ) {
      const root = rootOf(n.expression.expression);
      if (root) names.add(root);
    }
    ts.forEachChild(n, visit);
  };
  visit(source);
  return names;
}

/** Calls that make a buffer or container the caller may then write, as `new` does. */
const MAKES_CONTAINER = /^Buffer\.(alloc|allocUnsafe|allocUnsafeSlow)$/;

/** Whether `e` makes a container that holds state: `new X` (X not stateless) or a call in MAKES_CONTAINER. */
function makesContainer(e: ts.Expression, source: ts.SourceFile): boolean {
  const x = unwrap(e);
  if (ts.isNewExpression(x)) return !STATELESS.has(x.expression.getText(source));
  return ts.isCallExpression(x) && MAKES_CONTAINER.test(x.expression.getText(source));
}

/** The function a top-level statement declares, with its name: `function f() {}`, `const f = () => …`. */
function declaredFunction(st: ts.Statement): { name: string; fn: ts.FunctionLikeDeclaration } | undefined {
  if (ts.isFunctionDeclaration(st) && st.name && st.body) return { name: st.name.text, fn: st };
  if (!ts.isVariableStatement(st)) return undefined;
  const [d] = st.declarationList.declarations;
  const init = d?.initializer && unwrap(d.initializer);
  if (d && ts.isIdentifier(d.name) && init && (ts.isArrowFunction(init) || ts.isFunctionExpression(init)))
    return { name: d.name.text, fn: init };
  return undefined;
}

/**
 * Whether a call of `fn` makes state its caller then holds: it returns a container it made, or a
 * closure over a `let` or a container of its own (`once`'s memo: a Map its returned function
 * fills). A module-level const set to such a call is module state as much as a `new Map()` is.
 */
function makesState(fn: ts.FunctionLikeDeclaration, source: ts.SourceFile): boolean {
  const body = fn.body;
  if (!body) return false;
  if (!ts.isBlock(body)) return makesContainer(body, source);
  const held = new Set<string>();
  for (const st of body.statements) {
    if (!ts.isVariableStatement(st)) continue;
    const constant = (st.declarationList.flags & ts.NodeFlags.Const) !== 0;
    for (const d of st.declarationList.declarations)
      if (ts.isIdentifier(d.name) && (!constant || (d.initializer && makesContainer(d.initializer, source))))
        held.add(d.name.text);
  }
  let makes = false;
  const visit = (n: ts.Node): void => {
    if (ts.isReturnStatement(n) && n.expression) {
      const r = unwrap(n.expression);
      const closure = ts.isArrowFunction(r) || ts.isFunctionExpression(r);
      if (makesContainer(r, source) || (closure && held.size > 0) || (ts.isIdentifier(r) && held.has(r.text)))
        makes = true;
    }
    // A nested function's own returns are not this function's.
    if (!ts.isFunctionLike(n)) ts.forEachChild(n, visit);
  };
  ts.forEachChild(body, visit);
  return makes;
}

/** The functions of `source` whose calls make state (see makesState), by name. */
export function stateMakers(source: ts.SourceFile): Set<string> {
  const names = new Set<string>();
  for (const st of source.statements) {
    const f = declaredFunction(st);
    if (f && makesState(f.fn, source)) names.add(f.name);
  }
  return names;
}

/**
 * `file: name` for each piece of module-level mutable state of `text`. `makers`: the names of
 * functions of other files whose calls make state (stateMakers), besides this file's own.
 */
export function moduleState(file: string, text: string, makers: ReadonlySet<string> = new Set()): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const mutated = mutatedNames(source);
  const makesStateHere = new Set([...makers, ...stateMakers(source)]);
  /** A call of a function that makes state, a type argument or two aside (`once<K, V>(…)`). */
  const callMakesState = (e: ts.Expression): boolean =>
    ts.isCallExpression(e) && ts.isIdentifier(e.expression) && makesStateHere.has(e.expression.text);
  const found: string[] = [];
  // A patch of a shared prototype is process-wide state whatever scope writes it.
  const visit = (n: ts.Node): void => {
    if (ts.isBinaryExpression(n) && n.operatorToken.kind === ts.SyntaxKind.EqualsToken) {
      const target = n.left.getText(source);
      if (/\.prototype\./.test(target)) found.push(`${file}: ${target}`);
    }
    ts.forEachChild(n, visit);
  };
  visit(source);
  for (const statement of source.statements) {
    if (!ts.isVariableStatement(statement)) continue;
    const constant = (statement.declarationList.flags & ts.NodeFlags.Const) !== 0;
    for (const d of statement.declarationList.declarations) {
      const names = ts.isIdentifier(d.name)
        ? [d.name.text]
        : d.name.elements.flatMap((e) =>
            ts.isBindingElement(e) && ts.isIdentifier(e.name) ? [e.name.text] : [],
          );
      const readOnlyType = d.type !== undefined && /^(Readonly|readonly )/.test(d.type.getText(source));
      const init = d.initializer && unwrap(d.initializer);
      const held =
        !constant ||
        (init !== undefined &&
          (((makesContainer(init, source) || callMakesState(init)) && !readOnlyType) ||
            ((ts.isArrayLiteralExpression(init) || ts.isObjectLiteralExpression(init)) &&
              names.some((n) => mutated.has(n)))));
      if (held) found.push(...names.map((n) => `${file}: ${n}`));
    }
  }
  return found;
}

test("no module-level mutable state but the allowed, each with its reason", () => {
  const all = [...FOLDERS.flatMap((f) => files(join(ROOT, f))), join(ROOT, "index.ts")];
  const texts = all.map((path) => ({
    file: relative(ROOT, path).split("\\").join("/"),
    text: readFileSync(path, "utf8"),
  }));
  // Functions whose calls make state, by name, wherever they are declared (one may be imported).
  const makers = new Set(
    texts.flatMap(({ file, text }) => [
      ...stateMakers(ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)),
    ]),
  );
  const found = texts.flatMap(({ file, text }) => moduleState(file, text, makers));
  // A new one: move it into the object its process makes (ProviderProcess, a command's engine),
  // or, for a cache that cannot change behaviour, add it to ALLOWED with why.
  expect(found.filter((f) => !ALLOWED.has(f))).toEqual([]);
  // An entry whose state is gone goes too, so the list stays the truth.
  expect([...ALLOWED.keys()].filter((a) => !found.includes(a))).toEqual([]);
});

test("the check finds a let, a container, a mutated literal, state a call made, and passes what cannot change", () => {
  const text = [
    "let count = 0;",
    "var old = 1;",
    "const seen = new Set<string>();",
    "const LOOKUP: ReadonlySet<string> = new Set(['a']);",
    "const PATTERN = new RegExp('x');",
    "const grown: string[] = [];",
    "export function add(x: string) { grown.push(x); }",
    "const state = { n: 0 };",
    "export function bump() { state.n += 1; }",
    "const TABLE = { a: 1 } as const;",
    "const NAMES = ['a', 'b'];",
    "export const used = NAMES.map((n) => TABLE.a + n).join();",
    "export function patch() { Thing.prototype.run = () => 1; }",
    "const bytes = Buffer.alloc(16);",
    "function once<K, V>(make: (k: K) => V) { const made = new Map<K, V>(); return (k: K) => made.get(k) ?? make(k); }",
    "const memo = once((k: string) => k + '!');",
    "const counter = counterOf(0);",
    "function render(n: number) { const parts = new Map(); parts.set(n, 'x'); return [...parts.values()].join(); }",
    "export const TEXT = render(1);",
  ].join("\n");
  expect(moduleState("x.ts", text, new Set(["counterOf"]))).toEqual([
    "x.ts: Thing.prototype.run",
    "x.ts: count",
    "x.ts: old",
    "x.ts: seen",
    "x.ts: grown",
    "x.ts: state",
    "x.ts: bytes",
    "x.ts: memo",
    "x.ts: counter",
  ]);
});
