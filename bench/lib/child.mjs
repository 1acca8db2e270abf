// Starts bench/lib/server-child.mjs in its own process and talks to it over IPC.
import { setTimeout, clearTimeout } from "node:timers";
import { fork } from "node:child_process";
import { fileURLToPath, URL } from "node:url";

const SCRIPT = fileURLToPath(new URL("./server-child.mjs", import.meta.url));

/** `env`: added to the child's environment (EDGE_BENCH_DIST: another build to serve). */
export function spawnServer(execArgv = [], env = {}) {
  const child = fork(SCRIPT, [], {
    env: { ...process.env, ...env },
    execArgv: ["--expose-gc", ...execArgv],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  let exited = false;
  child.on("exit", () => (exited = true));
  const call = (msg) =>
    new Promise((resolve, reject) => {
      if (exited) return reject(new Error("the server process has exited"));
      const onExit = (code) => reject(new Error(`the server process exited (${code}) during ${msg.cmd}`));
      child.once("exit", onExit);
      child.once("message", (m) => {
        child.off("exit", onExit);
        if (m.ok) resolve(m.reply);
        else reject(new Error(m.error));
      });
      child.send(msg);
    });
  return {
    pid: child.pid,
    call,
    async close() {
      if (exited) return;
      await call({ cmd: "close" }).catch(() => {});
      // Let it exit by itself (a --cpu-prof profile is written at a normal exit), then insist.
      const gone = new Promise((resolve) => child.once("exit", resolve));
      const timer = setTimeout(() => child.kill(), 5000);
      if (!exited) await gone;
      clearTimeout(timer);
    },
  };
}
