/**
 * No file of the repository holds a merge's conflict markers: CHANGELOG.md once kept two of them
 * through several commits (issue 54), each side's entries out of the released notes' reach.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(__dirname, "..", "..");

test("no tracked file holds a conflict marker (<<<<<<< or >>>>>>> at a line's start)", () => {
  const files = execFileSync("git", ["ls-files", "-z"], { cwd: ROOT, encoding: "utf8" })
    .split("\0")
    .filter(Boolean);
  const marked = files.flatMap((file) => {
    let text: string;
    try {
      text = readFileSync(join(ROOT, file), "utf8");
    } catch {
      return []; // listed but not in the work tree (deleted, not yet committed)
    }
    return text
      .split("\n")
      .flatMap((line, i) => (/^(<{7}|>{7})( |$)/.test(line) ? [`${file}:${i + 1}: ${line}`] : []));
  });
  expect(marked).toEqual([]);
});
