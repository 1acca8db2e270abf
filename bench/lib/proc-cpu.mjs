// CPU seconds (utime + stime, from /proc) of every process descended from a child, sampled every
// 50 ms while it runs, the last value seen of each process kept (bench/preview-cpu.mjs's method).
// Grouped as engine (pulumi), languageHost (pulumi-language-*), program (the program's node or
// python), plugin (a provider plugin: the dynamic provider host or pulumi-resource-edge), root
// (the child itself) and other.
import fs from "node:fs";
import { clearInterval, setInterval } from "node:timers";

const TICKS = 100; // USER_HZ on Linux

function readStat(pid) {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const close = s.lastIndexOf(")");
    const comm = s.slice(s.indexOf("(") + 1, close);
    const f = s.slice(close + 2).split(" ");
    return { comm, ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12])) / TICKS };
  } catch {
    return undefined;
  }
}
function cmdline(pid) {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
  } catch {
    return "";
  }
}
export function classify(comm, cmd) {
  if (comm === "pulumi") return "engine";
  if (comm.startsWith("pulumi-languag")) return "languageHost";
  if (
    cmd.includes("provider/plugin/index.js") ||
    cmd.includes("dynamic-provider") ||
    comm.startsWith("pulumi-resourc") ||
    cmd.includes("pulumi-resource-")
  )
    return "plugin";
  if (comm.startsWith("node") || comm.startsWith("python")) return "program";
  return "other";
}

/**
 * Samples `child`'s process tree until it exits; resolves to CPU seconds by group and `total`.
 * `rootClass` names the child itself (default "root"; "engine" when the child is the CLI).
 */
export function cpuOfTree(child, { rootClass = "root" } = {}) {
  const known = new Map([[child.pid, { cls: rootClass, cpu: 0, fixed: true }]]);
  const sample = () => {
    for (const name of fs.readdirSync("/proc")) {
      if (!/^\d+$/.test(name)) continue;
      const pid = Number(name);
      const st = readStat(pid);
      if (!st) continue;
      const k = known.get(pid);
      if (k) {
        k.cpu = Math.max(k.cpu, st.cpu);
        if (!k.fixed && (k.cls === "program" || k.cls === "other")) k.cls = classify(st.comm, cmdline(pid)); // after exec
      } else if (known.has(st.ppid)) {
        known.set(pid, { cls: classify(st.comm, cmdline(pid)), cpu: st.cpu });
      }
    }
  };
  sample();
  const timer = setInterval(sample, 50);
  return new Promise((resolve) => {
    child.on("exit", () => {
      clearInterval(timer);
      const cpu = { [rootClass]: 0, engine: 0, languageHost: 0, program: 0, plugin: 0, other: 0 };
      for (const { cls, cpu: c } of known.values()) cpu[cls] += c;
      for (const k of Object.keys(cpu)) cpu[k] = Math.round(cpu[k] * 100) / 100;
      cpu.total = Math.round(Object.values(cpu).reduce((a, b) => a + b, 0) * 100) / 100;
      resolve(cpu);
    });
  });
}
