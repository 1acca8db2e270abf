// @ts-check
/**
 * The docs' input tables, generated from the packaged provider's schema
 * (provider/plugin/schema.json, itself generated from the contract): a table between
 *   <!-- fields: edge:index:HttpsEdgeRoute -->
 *   <!-- /fields -->
 * lists every input of that resource, its fields when it is an object (a module), and its
 * description. A field added to the contract shows up here with `npm run generate`; a table that
 * differs from the schema is a problem of `scripts/snippets.js` (and so of the docs tests).
 */
const fs = require("node:fs");
const path = require("node:path");

const ROOT = path.resolve(__dirname, "..");
const MARKER = /<!-- fields: ([\w:]+) -->\n([\s\S]*?)<!-- \/fields -->/g;

/** @typedef {{ type?: string, $ref?: string, description?: string, properties?: Record<string, Prop>, required?: string[], replaceOnChanges?: boolean, items?: Prop, additionalProperties?: Prop, enum?: Array<{ value: unknown }> }} Prop */

/** @returns {{ resources: Record<string, { inputProperties: Record<string, Prop>, requiredInputs?: string[] }>, types: Record<string, Prop> }} */
function loadSchema() {
  return JSON.parse(fs.readFileSync(path.join(ROOT, "provider/plugin/schema.json"), "utf8"));
}

/** Markdown-safe table cell. */
const cell = (/** @type {string} */ s) => s.replace(/\|/g, "\\|").replace(/\n/g, " ");

/**
 * How an input is written: `{ enabled?, backendId }` for an object (required fields without `?`),
 * the values of an enum, `[...]` for a list, `{name: value}` for a map.
 * @param {Prop} prop
 * @param {ReturnType<typeof loadSchema>["types"]} types
 * @returns {string}
 */
function shapeOf(prop, types) {
  const ref = prop.$ref?.replace(/^#\/types\//, "");
  const target = ref ? types[ref] : prop;
  if (!target) return "";
  if (target.enum) return target.enum.map((e) => JSON.stringify(e.value)).join(" | ");
  if (target.type === "object" && target.properties) {
    const required = new Set(target.required ?? []);
    const fields = Object.keys(target.properties).map((k) => (required.has(k) ? k : `${k}?`));
    return `{ ${fields.join(", ")} }`;
  }
  if (target.type === "array") return `${target.items ? shapeOf(target.items, types) : "any"}[]`;
  if (target.type === "object" && target.additionalProperties) return "{ name: value }";
  return target.type ?? "";
}

/**
 * The table of one resource's inputs.
 * @param {string} token e.g. edge:index:HttpsEdgeRoute
 * @param {ReturnType<typeof loadSchema>} [schema]
 * @returns {string}
 */
function fieldTable(token, schema = loadSchema()) {
  const resource = schema.resources[token];
  if (!resource) throw new Error(`no resource ${token} in provider/plugin/schema.json`);
  const required = new Set(resource.requiredInputs ?? []);
  const rows = Object.entries(resource.inputProperties).map(([name, prop]) => {
    const notes = [prop.description ?? ""];
    if (required.has(name)) notes.unshift("**Required.**");
    if (prop.replaceOnChanges && !/replaces/.test(prop.description ?? ""))
      notes.push("A change replaces the resource.");
    return `| \`${name}\` | \`${cell(shapeOf(prop, schema.types))}\` | ${cell(notes.join(" ").trim())} |`;
  });
  return ["| Input | Written as | Meaning |", "|---|---|---|", ...rows].join("\n") + "\n";
}

/**
 * A document with its field tables regenerated, and the tables that were stale.
 * @param {string} doc path relative to the repository (for messages)
 * @param {string} text the document
 * @returns {{ problems: string[], text: string }}
 */
function syncFieldTables(doc, text) {
  /** @type {string[]} */
  const problems = [];
  const schema = loadSchema();
  const updated = text.replace(MARKER, (whole, token, table) => {
    let fresh;
    try {
      fresh = fieldTable(token, schema);
    } catch (e) {
      problems.push(`${doc}: ${/** @type {Error} */ (e).message}`);
      return whole;
    }
    if (table !== fresh)
      problems.push(`${doc}: the field table of ${token} differs from the schema (run: npm run docs)`);
    return `<!-- fields: ${token} -->\n${fresh}<!-- /fields -->`;
  });
  return { problems, text: updated };
}

module.exports = { fieldTable, syncFieldTables, shapeOf };
