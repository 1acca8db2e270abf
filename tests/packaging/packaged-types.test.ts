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

test("every language's SDK takes the TLS settings, and marks the client key secret itself", () => {
  const read = (file: string) => {
    const full = path.join(ROOT, "dist/sdks", file);
    if (!fs.existsSync(full)) throw new Error(`${full} is missing: run npm run sdks (npm test does)`);
    return fs.readFileSync(full, "utf8");
  };
  const node = read("nodejs/provider.ts");
  for (const k of ["caCertificate", "clientCertificate", "clientKey"])
    expect(node).toContain(`${k}?: pulumi.Input<string`);
  expect(node).toContain(
    'resourceInputs["clientKey"] = args?.clientKey ? pulumi.secret(args.clientKey) : undefined;',
  );
  const python = read("python/pulumi_edge/provider.py");
  for (const k of ["ca_certificate", "client_certificate", "client_key"])
    expect(python).toContain(`${k}: pulumi.Input[Optional[_builtins.str]] = None`);
  expect(python).toContain(
    '__props__.__dict__["client_key"] = None if client_key is None else pulumi.Output.secret(client_key)',
  );
  const go = read("go/edge/provider.go");
  for (const k of ["CaCertificate", "ClientCertificate", "ClientKey"])
    expect(go).toMatch(new RegExp(`\\b${k}\\s+pulumi\\.StringPtrInput`));
  expect(go).toContain("args.ClientKey = pulumi.ToSecret(args.ClientKey).(pulumi.StringPtrInput)");
});
