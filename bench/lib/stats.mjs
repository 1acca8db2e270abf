// Small statistics and process helpers shared by the benchmark sections.
import { performance } from "node:perf_hooks";
import fs from "node:fs";

export function median(values) {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

export function percentile(values, p) {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  return v[Math.min(v.length - 1, Math.max(0, Math.ceil((p / 100) * v.length) - 1))];
}

export const round = (x, digits = 2) => (Number.isFinite(x) ? Number(x.toFixed(digits)) : null);
export const ratio = (a, b) => round(a / b, 3);

const TICKS = 100; // USER_HZ on Linux

/**
 * CPU seconds used so far by this process's waited-for children (and their waited-for
 * descendants): /proc/self/stat cutime + cstime. The delta around one `pulumi` command is the
 * CPU of the whole engine process tree (CLI, language host, program, provider), a number the
 * other tenants of a noisy machine disturb far less than wall time. null where /proc is absent.
 */
export function childrenCpuSeconds() {
  try {
    const stat = fs.readFileSync("/proc/self/stat", "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // fields[0] is field 3 (state); cutime and cstime are fields 16 and 17.
    return (Number(fields[13]) + Number(fields[14])) / TICKS;
  } catch {
    return null;
  }
}

/** Wall seconds and children CPU seconds of an async step. */
export async function timed(fn) {
  const cpu0 = childrenCpuSeconds();
  const t0 = performance.now();
  const value = await fn();
  const wall = (performance.now() - t0) / 1000;
  const cpu1 = childrenCpuSeconds();
  return { value, wall, cpu: cpu0 === null ? null : cpu1 - cpu0 };
}

/** Median per-call microseconds of `fn` over `batches` batches of `size` sequential calls. */
export async function perCallMicros(fn, { batches = 10, size = 200, warmup = 200 } = {}) {
  for (let i = 0; i < warmup; i++) await fn(i);
  const perBatch = [];
  let i = 0;
  for (let b = 0; b < batches; b++) {
    const t0 = performance.now();
    for (let k = 0; k < size; k++) await fn(i++);
    perBatch.push(((performance.now() - t0) * 1000) / size);
  }
  return { median: median(perBatch), min: Math.min(...perBatch), max: Math.max(...perBatch) };
}

export const log = (...args) => console.log(`[bench ${new Date().toISOString().slice(11, 19)}]`, ...args);
