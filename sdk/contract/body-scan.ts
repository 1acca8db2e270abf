/**
 * The bounds of a request body's shape, checked on its bytes before JSON.parse or any schema
 * sees it: a list or map with more items than its field allows (LIST_MAX_ITEMS by field name,
 * BODY_MAX_ITEMS for any other), or more values in all than BODY_MAX_VALUES. A body of 250,000
 * bad items is then refused after one pass over its bytes (a few ms), instead of after
 * JSON.parse builds 250,000 objects and the schema collects 250,000 issues (seconds of the event
 * loop and hundreds of MB for four such bodies at once; RELIABILITY.md).
 *
 * It reads structure only (brackets, commas, colons, where strings end); whatever is not JSON it
 * leaves to JSON.parse to report.
 */
import type { Problem } from "./errors";
import { BODY_MAX_VALUES, maxItemsAt, tooManyItemsMessage } from "./limits";
import { formatPath } from "./problems";

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const utf8 = new TextDecoder("utf-8");

interface Frame {
  object: boolean;
  /** Where this container sits in its parent: a key, an index; undefined at the top. */
  at: PropertyKey | undefined;
  /** Items (array) or keys (object) seen so far. */
  count: number;
  max: number;
  /** In an object: the last key read, to name the container that follows it. */
  key?: string;
  /** In an object: the next string is a key. */
  expectKey: boolean;
}

/** The first bound a body's bytes break, as the problem to answer; undefined when none. */
export function bodyShapeProblem(bytes: Uint8Array): Problem | undefined {
  const stack: Frame[] = [];
  let values = 0;
  const pathOf = (): string => formatPath(stack.slice(1).map((f) => f.at!));
  /** A value starts in the innermost container: count it (an array's item). */
  const valueStarts = (): Problem | undefined => {
    if (++values > BODY_MAX_VALUES) {
      // Named by its top-level field (the path where the count passed may be 20,000 levels deep).
      const field = stack.length > 1 ? formatPath([stack[1]!.at!]) : (stack[0]?.key ?? "");
      return { field, msg: `holds more values than a request body may (${BODY_MAX_VALUES} in all)` };
    }
    const top = stack.at(-1);
    if (top && !top.object && ++top.count > top.max)
      return { field: pathOf(), msg: tooManyItemsMessage(top.max) };
    return undefined;
  };
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]!;
    const top = stack.at(-1);
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09 || c === 0x3a) continue; // blanks, ':'
    if (c === 0x2c) {
      if (top?.object) top.expectKey = true; // ','
      continue;
    }
    if (c === 0x7d || c === 0x5d) {
      stack.pop(); // '}' ']'
      continue;
    }
    if (c === QUOTE) {
      let end = i + 1;
      let escaped = false;
      while (end < bytes.length && bytes[end] !== QUOTE) {
        if (bytes[end] === BACKSLASH) {
          escaped = true;
          end++;
        }
        end++;
      }
      if (top?.object && top.expectKey) {
        top.expectKey = false;
        // Keys are short; one with escapes is read as JSON to get it exactly.
        const raw = bytes.subarray(i, end + 1);
        try {
          top.key = escaped ? String(JSON.parse(utf8.decode(raw))) : utf8.decode(raw.subarray(1, -1));
        } catch {
          return undefined; // not JSON: JSON.parse says so
        }
        if (++top.count > top.max) {
          // The body itself has no field name: the key past the bound is named instead.
          return stack.length > 1
            ? { field: pathOf(), msg: tooManyItemsMessage(top.max) }
            : {
                field: formatPath([top.key]),
                msg: `is a field too many (a request body holds at most ${top.max})`,
              };
        }
      } else {
        const problem = valueStarts();
        if (problem) return problem;
      }
      i = end;
      continue;
    }
    if (c === 0x7b || c === 0x5b) {
      // '{' '['
      const problem = valueStarts();
      if (problem) return problem;
      const at = top === undefined ? undefined : top.object ? top.key : top.count - 1;
      stack.push({ object: c === 0x7b, at, count: 0, max: maxItemsAt(at), expectKey: c === 0x7b });
      continue;
    }
    // A number or a literal: one value, skipped to its end.
    const problem = valueStarts();
    if (problem) return problem;
    while (i + 1 < bytes.length && !isDelimiter(bytes[i + 1]!)) i++;
  }
  return undefined;
}

/** Bytes that end a number or a literal. */
const isDelimiter = (c: number) =>
  c === 0x2c || c === 0x5d || c === 0x7d || c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
