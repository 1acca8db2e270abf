/* global fetch, performance, setTimeout, clearTimeout */
/**
 * Invalid bodies against a real server (issue 26, item 5): `edge-service serve` from dist, on
 * loopback, a fresh data directory; ROUNDS rounds of CONCURRENCY concurrent PUTs of a ~0.7 MB
 * invalid `ip_policy_ids` (250,000 `{}`) to `PUT /edges/tls/{id}/ip_restriction`, while a probe
 * asks `/healthz` every 20 ms. Prints the slowest and median `/healthz`, the server's peak RSS
 * (VmHWM from /proc, Linux) and the invalid PUTs' times; first, 20 `/healthz` with nothing else
 * to do: the floor on this machine at the time (a shared machine's load shows there).
 *
 * `--shape nested` sends the same items as 250 lists of 1,000 under an unknown field instead (each
 * list within its bound: only the bound on a body's values in all refuses it before parsing).
 *
 *   npm run build && node bench/invalid-bodies.mjs [--rounds 5] [--concurrency 4] [--items 250000] [--shape flat|nested]
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { needBuild } from "./lib/needs.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
needBuild(ROOT);
const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "5" },
    concurrency: { type: "string", default: "4" },
    items: { type: "string", default: "250000" },
    shape: { type: "string", default: "flat" },
  },
});
const ROUNDS = Number(values.rounds);
const CONCURRENCY = Number(values.concurrency);
const ITEMS = Number(values.items);

const dataDir = mkdtempSync(join(tmpdir(), "bench-invalid-"));
const child = spawn(
  process.execPath,
  [join(ROOT, "dist/service/cli/edge-service.js"), "serve", "--port", "0", "--data", dataDir],
  { stdio: ["ignore", "pipe", "ignore"], env: { ...process.env, EDGE_API_KEY: "" } },
);
const url = await new Promise((resolve, reject) => {
  let out = "";
  const timer = setTimeout(() => reject(new Error(`no "listening" line within 30 s: ${out}`)), 30_000);
  child.stdout.setEncoding("utf8").on("data", (d) => {
    out += d;
    const m = /listening on (http:\/\/\S+)/.exec(out);
    if (m) {
      clearTimeout(timer);
      resolve(m[1].replace("0.0.0.0", "127.0.0.1"));
    }
  });
  child.once("exit", (code) => reject(new Error(`the server exited (${code}): ${out}`)));
});

const rssKb = (field) => {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${child.pid}/status`, "utf8"));
  return m ? Number(m[1]) : NaN;
};

try {
  const edge = await (
    await fetch(`${url}/edges/tls`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ hostports: ["bench.example:443"] }),
    })
  ).json();
  const body = JSON.stringify(
    values.shape === "nested"
      ? {
          ip_policy_ids: ["p1"],
          x: Array.from({ length: ITEMS / 1000 }, () => Array.from({ length: 1000 }, () => ({}))),
        }
      : { ip_policy_ids: Array.from({ length: ITEMS }, () => ({})) },
  );
  const rssBefore = rssKb("VmRSS");

  /** One `/healthz`: its time (ms), or NaN when the connection failed. */
  const healthz = async () => {
    const t = performance.now();
    try {
      await (await fetch(`${url}/healthz`)).text();
      return performance.now() - t;
    } catch {
      return NaN;
    }
  };
  // The floor on this machine now: probes with nothing else to do.
  const idle = [];
  for (let i = 0; i < 20; i++) {
    idle.push(await healthz());
    await new Promise((r) => setTimeout(r, 20));
  }

  let probing = true;
  const probes = [];
  const probe = (async () => {
    // Bounded: ends when the PUTs do, or after 10 minutes whatever happens.
    const until = Date.now() + 600_000;
    while (probing && Date.now() < until) {
      probes.push(await healthz());
      await new Promise((r) => setTimeout(r, 20));
    }
  })();

  const puts = [];
  let status;
  let answerBytes;
  for (let round = 0; round < ROUNDS; round++) {
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        const t = performance.now();
        try {
          const res = await fetch(`${url}/edges/tls/${edge.id}/ip_restriction`, {
            method: "PUT",
            headers: { "content-type": "application/json" },
            body,
          });
          const text = await res.text();
          status = res.status;
          answerBytes = text.length;
        } catch (e) {
          status = `failed: ${e.cause?.code ?? e.message}`;
        }
        puts.push(performance.now() - t);
      }),
    );
  }
  probing = false;
  await probe;

  const sorted = (xs) => [...xs].sort((a, b) => a - b);
  const at = (xs, q) => sorted(xs)[Math.min(xs.length - 1, Math.floor(q * xs.length))];
  const ms = (x) => `${x.toFixed(1)} ms`;
  console.log(
    JSON.stringify(
      {
        shape: values.shape,
        body_bytes: body.length,
        rounds: ROUNDS,
        concurrency: CONCURRENCY,
        put_status: status,
        answer_bytes: answerBytes,
        put_median: ms(at(puts, 0.5)),
        put_max: ms(Math.max(...puts)),
        healthz_idle_median: ms(at(idle.filter(Number.isFinite), 0.5)),
        healthz_idle_max: ms(Math.max(...idle.filter(Number.isFinite))),
        healthz_probes: probes.length,
        healthz_failed: probes.filter((x) => !Number.isFinite(x)).length,
        healthz_median: ms(at(probes.filter(Number.isFinite), 0.5)),
        healthz_max: ms(Math.max(...probes.filter(Number.isFinite))),
        rss_before_mb: Math.round(rssBefore / 1024),
        rss_peak_mb: Math.round(rssKb("VmHWM") / 1024),
      },
      null,
      2,
    ),
  );
} finally {
  child.kill("SIGTERM");
  await new Promise((r) => child.once("exit", r));
  rmSync(dataDir, { recursive: true, force: true });
}
