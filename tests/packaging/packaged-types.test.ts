/**
 * The programs written against `pulumi-edge/packaged` type-check against the Node.js SDK that
 * `npm run sdks` generates (in `npm test`'s pretest). `npm run lint` leaves them out
 * (tsconfig.json's exclude): it runs on a fresh checkout, without the build or Go.
 */
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { ROOT } from "../support/edge-service";

test("the packaged programs type-check against the generated SDK (tsconfig.packaged.json)", async () => {
  const sdk = path.join(ROOT, "dist/packaged/index.d.ts");
  if (!fs.existsSync(sdk))
    throw new Error(`${sdk} is missing: run npm run build && npm run sdks (npm test does)`);
  const run = await new Promise<{ code: number; out: string }>((resolve) => {
    execFile(
      process.execPath,
      [path.join(ROOT, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.packaged.json", "--noEmit"],
      { cwd: ROOT },
      (error, stdout, stderr) => resolve({ code: error ? 1 : 0, out: stdout + stderr }),
    );
  });
  expect(run.out).toBe("");
  expect(run.code).toBe(0);
});
