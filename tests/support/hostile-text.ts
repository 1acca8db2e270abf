/**
 * Text a hostile or careless source may hand us (a service's audit event, a stack name, an
 * engine's error): any code point, lone surrogates, and the pieces that break the formats we
 * write (line breaks, quotes, escapes, table pipes, code fences, XML's non-characters, the
 * authorship line's own words). For property tests of what we render or parse.
 */
import fc from "fast-check";

const PIECES = [
  ": ",
  ":",
  '"',
  "\\",
  '\\"',
  "|",
  "\\|",
  "`",
  "``",
  "```",
  "~~~",
  "\n",
  "\r",
  "\r\n",
  "\t",
  " ",
  "\u0000",
  "\u0007",
  "\u001b[31m",
  "\u0085",
  "\u009b",
  "\u2028",
  "\u202e",
  "\u200d",
  "\ufeff",
  "\ufffe",
  "\uffff",
  "\ufdd0",
  "\u{1fffe}",
  "\u{10ffff}",
  "\ud800",
  "\udfff",
  "😀",
  "é",
  "]]>",
  "<!--",
  "<b>",
  "&",
  "&amp;",
  "*",
  "_",
  "[x](y)",
  "#",
  "-",
  " changed out of band",
  " deleted out of band",
  " with its edge ",
  " at ",
  ' by key "',
  " (request ",
  ")",
];

/** One UTF-16 code unit: any, lone surrogates included. */
const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((n) => String.fromCharCode(n));

/** A string of any code points, lone surrogates and format-breaking pieces. */
export const hostileText = (maxLength = 12): fc.Arbitrary<string> =>
  fc.string({
    unit: fc.oneof(
      { arbitrary: fc.constantFrom(...PIECES), weight: 3 },
      { arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }), weight: 2 },
      { arbitrary: codeUnit, weight: 1 },
      { arbitrary: fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 1 }), weight: 3 },
    ),
    maxLength,
  });
