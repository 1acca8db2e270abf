// @ts-check
/**
 * docs/api.md, the API reference, rendered from the OpenAPI document the service serves at
 * `GET /openapi.json` (sdk/contract/openapi.ts). The test tests/service/api-docs.test.ts renders
 * it again from the source and fails when the committed file differs.
 * Usage: npm run api-docs (builds, then writes docs/api.md).
 */
const fs = require("node:fs");
const path = require("node:path");

const ROOT = path.resolve(__dirname, "..");
const OUT = "docs/api.md";

/** @typedef {Record<string, any>} Json */

/** Text safe inside a table cell: one line, no unescaped pipe. */
function cell(/** @type {unknown} */ text) {
  return String(text ?? "")
    .replace(/\s*\n\s*/g, " ")
    .replace(/\|/g, "\\|");
}

/** A GitHub-style heading anchor. */
function anchor(/** @type {string} */ heading) {
  return heading
    .toLowerCase()
    .replace(/[^\w\- ]/g, "")
    .replace(/ /g, "-");
}

/**
 * The short type of a schema: `string`, `integer`, `array of string`, `object`, `X or null`.
 * @returns {string}
 */
function typeOf(/** @type {Json} */ s) {
  if (s.$ref) return String(s.$ref).replace("#/components/schemas/", "");
  if (s.anyOf || s.oneOf) return (s.anyOf ?? s.oneOf).map(typeOf).join(" or ");
  if (s.const !== undefined) return `\`${JSON.stringify(s.const)}\``;
  if (Array.isArray(s.type)) return s.type.join(" or ");
  if (s.type === "array") return s.items ? `array of ${typeOf(s.items)}` : "array";
  if (s.type === "object" && !s.properties && s.additionalProperties)
    return typeof s.additionalProperties === "object" ? `map of ${typeOf(s.additionalProperties)}` : "object";
  return s.type ?? "any";
}

/** The rules a value must meet: enum, bounds, lengths, pattern, format, default. */
function rules(/** @type {Json} */ s) {
  const out = [];
  if (s.enum)
    out.push(`one of ${s.enum.map((/** @type {unknown} */ v) => `\`${JSON.stringify(v)}\``).join(", ")}`);
  const bound = (/** @type {string} */ key, /** @type {string} */ text) => {
    if (s[key] !== undefined) out.push(`${text} ${s[key]}`);
  };
  bound("minimum", "≥");
  bound("exclusiveMinimum", ">");
  bound("maximum", "≤");
  bound("exclusiveMaximum", "<");
  bound("minLength", "length ≥");
  bound("maxLength", "length ≤");
  bound("minItems", "items ≥");
  bound("maxItems", "items ≤");
  if (s.uniqueItems) out.push("unique items");
  if (s.pattern) out.push(`pattern \`${s.pattern}\``);
  if (s.format) out.push(`format ${s.format}`);
  if (s.default !== undefined) out.push(`default \`${JSON.stringify(s.default)}\``);
  return out.join("; ");
}

/**
 * The object schema inside `X or null`, if any (a nullable module).
 * @returns {Json | undefined}
 */
function objectOf(/** @type {Json} */ s) {
  if (s.type === "object" && s.properties) return s;
  if (s.type === "array" && s.items) return objectOf(s.items);
  for (const alt of s.anyOf ?? s.oneOf ?? []) {
    const o = objectOf(alt);
    if (o) return o;
  }
  return undefined;
}

/**
 * The object forms a body schema takes: itself, or the objects among its alternatives.
 * @returns {Json[]}
 */
function forms(/** @type {Json} */ s) {
  if (s.type === "object" && s.properties) return [s];
  return (s.anyOf ?? s.oneOf ?? []).filter(
    (/** @type {Json} */ alt) => alt.type === "object" && alt.properties,
  );
}

/**
 * The rows of an object schema's fields, nested fields under dotted names (`[]` for an array's
 * items). An inner object equal to another named schema is referred to, not repeated.
 * @param {Json} object
 * @param {string} prefix
 * @param {Map<string, string>} named JSON text of a schema → its name
 * @param {string} self the name of the schema being rendered
 * @returns {string[]}
 */
function fieldRows(object, prefix, named, self) {
  const rows = [];
  const required = new Set(object.required ?? []);
  for (const [name, s] of Object.entries(object.properties ?? {})) {
    const field = `${prefix}${name}`;
    const inner = objectOf(s);
    const same = inner && named.get(JSON.stringify(inner));
    const type =
      same && same !== self ? typeOf(s).replace("object", `[${same}](#${anchor(same)})`) : typeOf(s);
    const description = s.description ?? inner?.description ?? "";
    rows.push(
      `| \`${field}\` | ${cell(type)} | ${required.has(name) ? "yes" : ""} | ${cell(rules(s))} | ${cell(description)} |`,
    );
    if (inner && !(same && same !== self)) {
      const nested = `${field}${s.type === "array" ? "[]" : ""}.`;
      rows.push(...fieldRows(inner, nested, named, self));
    }
  }
  return rows;
}

/**
 * docs/api.md from an OpenAPI 3.1 document.
 * @param {Json} doc
 * @returns {string}
 */
function render(doc) {
  const out = [];
  out.push(`# ${doc.info.title} (version ${doc.info.version})`);
  out.push("");
  out.push(
    "<!-- Generated from the OpenAPI document the service serves at `GET /openapi.json` " +
      "(sdk/contract/openapi.ts) by `npm run api-docs`; do not edit by hand. -->",
  );
  out.push("");
  out.push(doc.info.description);
  out.push("");
  out.push(
    "The service bundled in this package (`npx edge-service serve`) answers every operation below; " +
      "the machine-readable document is `GET /openapi.json` on a running service.",
  );
  out.push("");
  for (const [name, scheme] of Object.entries(doc.components.securitySchemes ?? {})) {
    out.push(
      `Authentication (\`${name}\`): ${scheme.type} ${scheme.scheme ?? ""}. ${scheme.description ?? ""}`,
    );
    out.push("");
  }

  /** @type {Map<string, {method: string, path: string, op: Json}[]>} */
  const byTag = new Map();
  for (const [p, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const tag = op.tags?.[0] ?? "Other";
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag)?.push({ method: method.toUpperCase(), path: p, op });
    }
  }

  out.push("## Operations");
  out.push("");
  out.push("| Operation | Method and path | Summary |");
  out.push("|---|---|---|");
  for (const ops of byTag.values())
    for (const { method, path: p, op } of ops)
      out.push(
        `| [\`${op.operationId}\`](#${anchor(op.operationId)}) | \`${method} ${p}\` | ${cell(op.summary)} |`,
      );
  out.push("");

  for (const [tag, ops] of byTag) {
    out.push(`## ${tag}`);
    out.push("");
    for (const { method, path: p, op } of ops) {
      out.push(`### ${op.operationId}`);
      out.push("");
      out.push(`\`${method} ${p}\`: ${op.summary}.`);
      out.push("");
      if (op.parameters?.length) {
        out.push("| Parameter | In | Required | Rules | Description |");
        out.push("|---|---|---|---|---|");
        for (const prm of op.parameters)
          out.push(
            `| \`${prm.name}\` | ${prm.in} | ${prm.required ? "yes" : ""} | ${cell(rules(prm.schema ?? {}))} | ${cell(prm.description)} |`,
          );
        out.push("");
      }
      if (op.requestBody) {
        const schema = op.requestBody.content["application/json"].schema;
        const name = typeOf(schema);
        out.push(
          `Request body${op.requestBody.required ? "" : " (optional)"}: [${name}](#${anchor(name)})` +
            `${op.requestBody.description ? `. ${op.requestBody.description}` : ""}`,
        );
        out.push("");
      }
      out.push("| Status | Body | Meaning |");
      out.push("|---|---|---|");
      for (const [status, r] of Object.entries(op.responses)) {
        const schema = r.content?.["application/json"]?.schema;
        const name = schema ? typeOf(schema) : "";
        out.push(`| ${status} | ${name ? `[${name}](#${anchor(name)})` : ""} | ${cell(r.description)} |`);
      }
      out.push("");
    }
  }

  const schemas = /** @type {Record<string, Json>} */ (doc.components.schemas);
  /** @type {Map<string, string>} */
  const named = new Map();
  for (const [name, s] of Object.entries(schemas))
    for (const form of forms(s)) if (!named.has(JSON.stringify(form))) named.set(JSON.stringify(form), name);
  out.push("## Schemas");
  out.push("");
  out.push(
    "Fields of each body; a nested field is named by its path (`a.b`, `a[].b` inside an array). " +
      "Request bodies (`…Create`, `…Update`, `…Put`) leave out what has a default; responses carry every field.",
  );
  out.push("");
  for (const [name, s] of Object.entries(schemas)) {
    out.push(`### ${name}`);
    out.push("");
    if (s.description) {
      out.push(s.description);
      out.push("");
    }
    const objects = forms(s);
    if (objects.length === 0) {
      out.push(`${typeOf(s)}${rules(s) ? `: ${rules(s)}` : ""}.`);
      out.push("");
      continue;
    }
    if (objects.length > 1) {
      out.push(`One of ${objects.length} forms:`);
      out.push("");
    }
    objects.forEach((object, i) => {
      if (objects.length > 1) {
        out.push(`Form ${i + 1}${object.description ? `: ${object.description}` : ""}`);
        out.push("");
      }
      if (object.additionalProperties === false) {
        out.push("No other fields (in a request: unknown fields are refused).");
        out.push("");
      }
      out.push("| Field | Type | Required | Rules | Description |");
      out.push("|---|---|---|---|---|");
      out.push(...fieldRows(object, "", named, name));
      out.push("");
    });
  }
  return out
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .replace(/\n*$/, "\n");
}

if (require.main === module) {
  const { buildOpenApi } = require(path.join(ROOT, "dist", "sdk", "contract"));
  fs.writeFileSync(path.join(ROOT, OUT), render(buildOpenApi()));
  console.log(`wrote ${OUT}`);
}

module.exports = { render, OUT };
