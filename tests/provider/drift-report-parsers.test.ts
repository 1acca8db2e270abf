/**
 * Every `pulumi-edge drift` report a parser reads stays readable whatever text the fleet holds:
 * stack names, directories, resource names and types, field paths, values, keys and errors with
 * random Unicode, lone surrogates, XML's non-characters, control characters, backticks, pipes and
 * line breaks. JUnit goes through a strict XML parser (saxes: it rejects U+FFFF, which a CI's
 * expat rejects too), Markdown through a CommonMark parser with GFM tables (markdown-it), JSON
 * through JSON.parse.
 */
import fc from "fast-check";
import MarkdownIt from "markdown-it";
import { SaxesParser } from "saxes";
import {
  type Author,
  type FleetReport,
  renderJson,
  renderJunit,
  renderMarkdown,
  renderTable,
  type StackReport,
  showValue,
  type Unattributed,
  type Unmanaged,
  type UnmanagedObject,
} from "../../commands/drift/report";
import { FC_SEED } from "../reliability/support";
import { hostileText } from "../support/hostile-text";

/** What the reports promise for one line of text: breaks and tabs as spaces, the unshowable as \uXXXX. */
const UNSHOWABLE = /[\p{Cc}\p{Cs}\p{Noncharacter_Code_Point}\p{Bidi_Control}\u2028\u2029]/gu;
const escaped = (c: string) => {
  const cp = c.codePointAt(0)!;
  const hex = cp.toString(16).toUpperCase();
  return cp > 0xffff ? `\\u{${hex}}` : `\\u${hex.padStart(4, "0")}`;
};
const expectedLine = (text: string) =>
  text.replace(/\r\n|[\r\n\t\u2028\u2029]/g, " ").replace(UNSHOWABLE, escaped);
/** And for text of several lines (an error): its lines (CR LF, CR, LF) and tabs kept. */
const expectedText = (text: string) =>
  text.replace(/\r\n?/g, "\n").replace(UNSHOWABLE, (c) => (c === "\n" || c === "\t" ? c : escaped(c)));

const text = hostileText(10);
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
/** A value as the report holds it: display text, raw or as showValue makes it. */
const value = fc.oneof(text, text.map(showValue));

const author: fc.Arbitrary<Author> = fc
  .record({
    field: text,
    at: text,
    key: text,
    request: text,
    change: maybe(fc.constantFrom("deleted" as const, "created" as const)),
    edge: maybe(text),
  })
  .map(({ change, edge, ...a }) => ({
    ...a,
    ...(change === undefined ? {} : { change }),
    ...(edge === undefined ? {} : { edge }),
  }));

const unattributed: fc.Arbitrary<Unattributed> = fc
  .record({
    field: text,
    change: maybe(fc.constantFrom("deleted" as const, "created" as const)),
    since: text,
    reason: text,
  })
  .map(({ change, ...u }) => (change === undefined ? u : { ...u, change }));

const unmanagedObject: fc.Arbitrary<UnmanagedObject> = fc
  .record({
    type: text,
    id: text,
    name: text,
    createdAt: maybe(text),
    summary: text,
    importCommand: text,
  })
  .map(({ createdAt, ...o }) => (createdAt === undefined ? o : { ...o, createdAt }));

const unmanaged: fc.Arbitrary<Unmanaged> = fc
  .record({
    stacks: fc.nat(50),
    services: fc.array(
      fc
        .record({
          service: text,
          objects: fc.array(unmanagedObject, { maxLength: 3 }),
          error: maybe(hostileText(40)),
        })
        .map(({ error, ...s }) => (error === undefined ? s : { ...s, objects: [], error })),
      { maxLength: 3 },
    ),
    caveats: fc.array(text, { maxLength: 2 }),
  })
  .map((u) => ({ ...u, complete: u.caveats.length === 0 }));

const stack: fc.Arbitrary<StackReport> = fc
  .record({
    dir: text,
    stack: text,
    verdict: fc.constantFrom("clean" as const, "drifted" as const, "error" as const),
    resources: fc.array(
      fc
        .record({
          urn: text,
          name: text,
          type: text,
          op: fc.oneof(fc.constantFrom("update", "create", "delete", "replace"), text),
          fields: fc.array(
            fc.record({ path: text, from: maybe(value), to: maybe(value) }).map(({ from, to, path }) => ({
              path,
              ...(from === undefined ? {} : { from }),
              ...(to === undefined ? {} : { to }),
            })),
            { maxLength: 3 },
          ),
          authors: fc.array(author, { maxLength: 2 }),
          unattributed: maybe(fc.array(unattributed, { minLength: 1, maxLength: 2 })),
        })
        .map(({ unattributed, ...r }) => (unattributed === undefined ? r : { ...r, unattributed })),
      { maxLength: 3 },
    ),
    error: maybe(hostileText(40)),
    remediation: maybe(
      fc
        .record({
          outcome: fc.constantFrom(
            "restored" as const,
            "refused" as const,
            "failed" as const,
            "skipped" as const,
          ),
          message: maybe(text),
        })
        .map(({ outcome, message }) => (message === undefined ? { outcome } : { outcome, message })),
    ),
    seconds: fc.integer({ min: 0, max: 100_000 }).map((n) => n / 10),
    path: maybe(fc.constantFrom("fast" as const, "refresh" as const, "engine" as const)),
    fallback: maybe(text),
  })
  .map(({ error, remediation, path, fallback, ...s }) => ({
    ...s,
    ...(error === undefined ? {} : { error }),
    ...(remediation === undefined ? {} : { remediation }),
    ...(path === undefined ? {} : { path, ...(fallback === undefined ? {} : { fallback }) }),
  }));

const fleet: fc.Arbitrary<FleetReport> = fc
  .record({ stacks: fc.array(stack, { minLength: 1, maxLength: 4 }), unmanaged: maybe(unmanaged) })
  .map(({ unmanaged, ...r }) => (unmanaged === undefined ? r : { ...r, unmanaged }));

const RUNS = { numRuns: 300, seed: FC_SEED };

// ---------------------------------------------------------------------------------------------
// JUnit

interface XmlElement {
  name: string;
  attributes: Record<string, string>;
  children: XmlElement[];
  text: string;
}

/** The document as a strict XML 1.0 parser reads it; throws on anything not well-formed. */
function parseXml(xml: string): XmlElement {
  const parser = new SaxesParser();
  const stack: XmlElement[] = [];
  let root: XmlElement | undefined;
  let error: Error | undefined;
  parser.on("error", (e) => (error ??= e));
  parser.on("opentag", (tag) => {
    const el: XmlElement = {
      name: tag.name,
      attributes: tag.attributes as Record<string, string>,
      children: [],
      text: "",
    };
    if (stack.length > 0) stack[stack.length - 1]!.children.push(el);
    else root = el;
    stack.push(el);
  });
  parser.on("text", (t) => {
    if (stack.length > 0) stack[stack.length - 1]!.text += t;
  });
  parser.on("closetag", () => void stack.pop());
  parser.write(xml).close();
  if (error) throw error;
  return root!;
}

test("the strict XML parser rejects what XML 1.0 cannot hold", () => {
  for (const bad of ["\uffff", "\ufffe", "\u0001", "\ud800"])
    expect(() => parseXml(`<a>${bad}</a>`)).toThrow();
  expect(parseXml('<a b="x">y</a>')).toEqual({ name: "a", attributes: { b: "x" }, children: [], text: "y" });
});

test("a description holding U+FFFF (the service takes it) gives JUnit a strict parser reads", () => {
  const report: FleetReport = {
    stacks: [
      {
        dir: "stacks/shop",
        stack: "prod",
        verdict: "drifted",
        seconds: 1,
        resources: [
          {
            urn: "urn:pulumi:prod::shop::pulumi-nodejs:dynamic/edge:HttpsEdge::web",
            name: "web",
            type: "pulumi-nodejs:dynamic/edge:HttpsEdge",
            op: "update",
            fields: [{ path: "description", from: showValue("shop"), to: showValue("sh\uffffop") }],
            authors: [],
          },
        ],
      },
    ],
  };
  const failure = parseXml(renderJunit(report)).children[0]!.children[0]!.children[0]!;
  expect(failure.text).toContain('description: "shop" => "sh\\uFFFFop"');
});

test("property: JUnit is well-formed XML with a testcase per stack, names as given", () => {
  fc.assert(
    fc.property(fleet, (report) => {
      const root = parseXml(renderJunit(report));
      expect(root.name).toBe("testsuites");
      expect(root.children).toHaveLength(1);
      const cases = root.children[0]!.children;
      const services = report.unmanaged?.services ?? [];
      // An incomplete list: one more testcase, its error.
      const incomplete = report.unmanaged?.complete === false ? 1 : 0;
      expect(cases).toHaveLength(report.stacks.length + services.length + incomplete);
      if (incomplete) {
        const c = cases.at(-1)!;
        expect(c.attributes).toMatchObject({ classname: "unmanaged", name: "complete" });
        expect(c.children.map((x) => x.name)).toEqual(["error"]);
      }
      services.forEach((s, i) => {
        const c = cases[report.stacks.length + i]!;
        expect(c.attributes).toMatchObject({ classname: "unmanaged", name: expectedLine(s.service) });
        const kinds = c.children.map((x) => x.name);
        expect(kinds).toEqual(s.error !== undefined ? ["error"] : s.objects.length > 0 ? ["failure"] : []);
      });
      report.stacks.forEach((s, i) => {
        const c = cases[i]!;
        expect(c.attributes).toMatchObject({ classname: expectedLine(s.dir), name: expectedLine(s.stack) });
        const kinds = c.children.map((x) => x.name);
        expect(kinds).toEqual(s.verdict === "clean" ? [] : [s.verdict === "drifted" ? "failure" : "error"]);
        if (s.verdict === "error") expect(c.children[0]!.text).toBe(expectedText(s.error ?? ""));
      });
    }),
    RUNS,
  );
});

// ---------------------------------------------------------------------------------------------
// Markdown

const markdown = new MarkdownIt();
type Token = ReturnType<typeof markdown.parse>[number];

/** The cells of a table row's source line as GFM splits them (a pipe after a backslash is text). */
const sourceCells = (line: string) => line.split(/(?<!\\)\|/).length - 2;

interface Table {
  header: Token[];
  rows: Token[][];
  lines: string[];
}

type Block = { kind: string; level?: string; inline?: Token; content?: string } & Partial<Table>;

/** The document's blocks: headings (their inline token), tables (cells' inline tokens), fences. */
function blocks(src: string) {
  const lines = src.split("\n");
  const out: Block[] = [];
  const tokens = markdown.parse(src, {});
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.type === "heading_open") {
      out.push({ kind: "heading", level: t.tag, inline: tokens[i + 1]! });
      i += 2;
    } else if (t.type === "table_open") {
      const table: Table = { header: [], rows: [], lines: [] };
      let row: Token[] | undefined;
      let inBody = false;
      for (i++; tokens[i]!.type !== "table_close"; i++) {
        const x = tokens[i]!;
        if (x.type === "tbody_open") inBody = true;
        if (x.type === "tr_open") {
          row = [];
          table.lines.push(lines[x.map![0]]!);
          if (inBody) table.rows.push(row);
          else table.header = row;
        }
        if (x.type === "inline") row!.push(x);
      }
      out.push({ kind: "table", ...table });
    } else if (t.type === "fence") {
      out.push({ kind: "fence", content: t.content });
    } else if (t.type !== "inline" && !t.type.endsWith("_close")) {
      out.push({ kind: t.type });
    }
  }
  return out;
}

/**
 * Inline content that is one code span holding exactly `text` (nothing before it or escaped from
 * it), then `after` as plain text.
 */
function expectCode(inline: Token | undefined, text: string, after?: string) {
  const shown = expectedLine(text);
  expect(inline!.children!.map((c) => [c.type, c.content])).toEqual([
    ...(shown === "" ? [] : [["code_inline", shown]]),
    ...(after === undefined ? [] : [["text", after]]),
  ]);
}

test("property: Markdown keeps every table's rows and cells and every code span whole", () => {
  fc.assert(
    fc.property(fleet, (report) => {
      const doc = blocks(renderMarkdown(report));
      const columns =
        3 + (report.stacks.some((s) => s.remediation) ? 1 : 0) + (report.stacks.some((s) => s.path) ? 1 : 0);

      expect(doc[0]).toMatchObject({ kind: "heading", level: "h2" });
      const summary = doc[1]!;
      expect(summary.kind).toBe("table");
      expect(summary.header).toHaveLength(columns);
      expect(summary.rows).toHaveLength(report.stacks.length);
      for (const line of summary.lines!) expect(sourceCells(line)).toBe(columns);
      report.stacks.forEach((s, i) => {
        const row = summary.rows![i]!;
        expectCode(row[0], `${s.dir}:${s.stack}`);
        expect(row[1]!.content).toBe(s.verdict);
      });

      let at = 2;
      for (const s of report.stacks.filter((x) => x.verdict === "drifted")) {
        const heading = doc[at++]!;
        expect(heading).toMatchObject({ kind: "heading", level: "h3" });
        expectCode(heading.inline, `${s.dir}:${s.stack}`, " drifted");
        const table = doc[at++]!;
        expect(table.kind).toBe("table");
        const expected = s.resources.flatMap((r) =>
          (r.fields.length > 0 ? r.fields.map((f) => f.path) : [""]).map((path) => ({ r, path })),
        );
        expect(table.rows).toHaveLength(expected.length);
        for (const line of table.lines!) expect(sourceCells(line)).toBe(5);
        expected.forEach(({ r, path }, j) => {
          const row = table.rows![j]!;
          expectCode(row[1], r.type);
          expectCode(row[2], path);
        });
      }
      for (const s of report.stacks.filter((x) => x.verdict === "error")) {
        const heading = doc[at++]!;
        expect(heading).toMatchObject({ kind: "heading", level: "h3" });
        expectCode(heading.inline, `${s.dir}:${s.stack}`, " could not be checked");
        expect(doc[at++]).toEqual({ kind: "fence", content: `${expectedText(s.error ?? "")}\n` });
      }
      if (report.unmanaged) {
        const u = report.unmanaged;
        expect(doc[at++]).toMatchObject({ kind: "heading", level: "h3" });
        expect(doc[at++]).toMatchObject({ kind: "paragraph_open" });
        const table = doc[at++]!;
        const objects = u.services.flatMap((s) => s.objects.map((o) => ({ s, o })));
        expect(table.kind).toBe("table");
        expect(table.rows).toHaveLength(objects.length);
        for (const line of table.lines!) expect(sourceCells(line)).toBe(6);
        objects.forEach(({ s, o }, j) => {
          const row = table.rows![j]!;
          expectCode(row[0], s.service);
          expectCode(row[1], o.type);
          expectCode(row[2], o.id);
          expectCode(row[5], o.importCommand);
        });
        const notes = u.services.filter((s) => s.error !== undefined).length + u.caveats.length;
        if (notes > 0) {
          expect(doc[at++]).toMatchObject({ kind: "bullet_list_open" });
          expect(doc.slice(at, at + 2 * notes)).toEqual(
            Array.from({ length: notes }, () => [
              { kind: "list_item_open" },
              { kind: "paragraph_open" },
            ]).flat(),
          );
          at += 2 * notes;
        }
      }
      expect(doc.slice(at)).toEqual([]);
    }),
    RUNS,
  );
});

// ---------------------------------------------------------------------------------------------
// JSON and the terminal table

test("property: JSON parses back to the very report", () => {
  fc.assert(
    fc.property(fleet, (report) => {
      const json = JSON.parse(renderJson(report));
      expect(json.stacks).toEqual(report.stacks);
      expect(json.unmanaged).toEqual(report.unmanaged);
    }),
    RUNS,
  );
});

test("property: the terminal table has one row per stack and no control character", () => {
  fc.assert(
    fc.property(fleet, (report) => {
      const out = renderTable(report);
      expect(out).not.toMatch(
        /[\p{Cs}\p{Noncharacter_Code_Point}\p{Bidi_Control}\u2028\u2029]|(?![\n\t])\p{Cc}/u,
      );
      const rows = out.split("\n").slice(1, 1 + report.stacks.length);
      report.stacks.forEach((s, i) =>
        expect(rows[i]!.startsWith(expectedLine(`${s.dir}:${s.stack}`))).toBe(true),
      );
    }),
    RUNS,
  );
});
