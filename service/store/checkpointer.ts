/**
 * WAL checkpoints off the request path. SQLite's automatic checkpoint runs inside the COMMIT that
 * crosses 1,000 WAL pages: it copies them into the database file and fsyncs, milliseconds during
 * which the event loop serves nobody (the POST and PATCH p99 of BENCHMARKS.md). A long-lived
 * server instead turns that off and checkpoints from a worker thread with its own connection:
 * PASSIVE checkpoints block neither readers nor writers, and the fsync leaves the event loop.
 *
 * A PASSIVE checkpoint alone never rewinds the WAL under a steady stream of writes: SQLite rewinds
 * it when a write begins with every frame copied, and by the time the worker is done the server
 * has committed more. So the worker reports how long the WAL has grown, and past a bound the
 * server copies the few frames left itself (a short PASSIVE checkpoint on its own connection):
 * its next write then starts the WAL over. The blocking modes (RESTART, TRUNCATE) would hold
 * writers back for the whole copy, tens of ms, which is what this is for avoiding.
 */
import { Worker } from "node:worker_threads";

export interface CheckpointerOptions {
  /** The database file. */
  location: string;
  intervalMs?: number;
  /** After each checkpoint: the WAL's length in pages. */
  onProgress: (walPages: number) => void;
  /** Called if the worker fails: the caller turns automatic checkpoints back on. */
  onFailure: (error: Error) => void;
}

// Plain JavaScript evaluated in the worker (so that it runs the same from dist and from ts-jest).
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.libsql);
const db = new Database(workerData.location);
const timer = setInterval(() => {
  const [{ log }] = db.pragma("wal_checkpoint(PASSIVE)");
  parentPort.postMessage(log);
}, workerData.intervalMs);
parentPort.on("message", () => {
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

/**
 * How long `stop` waits for the worker to close its connection before terminating it (which may
 * abort the process, see `stop`): a checkpoint on a loaded machine can take seconds, and
 * orchestrators give a stopping process 30 s by default.
 */
const STOP_WAIT_MS = 20_000;

export class Checkpointer {
  private readonly worker: Worker;
  private stopped = false;
  private readonly exited: Promise<void>;

  constructor(opts: CheckpointerOptions) {
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        libsql: require.resolve("libsql"),
        location: opts.location,
        intervalMs: opts.intervalMs ?? 100,
      },
    });
    this.worker.unref(); // never the reason a process stays alive
    this.exited = new Promise((resolve) => this.worker.once("exit", () => resolve()));
    const fail = (error: Error) => {
      if (!this.stopped) opts.onFailure(error);
      this.stopped = true;
    };
    this.worker.on("message", (walPages: number) => {
      if (!this.stopped) opts.onProgress(walPages);
    });
    this.worker.on("error", fail);
    this.worker.on("exit", (code) => fail(new Error(`the checkpoint worker exited (${code})`)));
  }

  /**
   * Asks the worker to close its connection and end, and resolves when it has. A process must not
   * exit before: exiting terminates the worker wherever it is, and one terminated inside a libsql
   * call aborts the whole process (neon panics on the pending termination: SIGABRT instead of
   * exit 0 after SIGTERM, 2 in 40 stops under load before this waited).
   */
  stop(): Promise<void> {
    if (!this.stopped) {
      this.stopped = true;
      this.worker.postMessage("stop");
    }
    // Held alive until then: a process whose loop is otherwise empty would exit and terminate it.
    this.worker.ref();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(
        () =>
          void this.worker.terminate().then(
            () => resolve(),
            () => resolve(),
          ),
        STOP_WAIT_MS,
      );
      timer.unref();
    });
    return Promise.race([this.exited, late]).finally(() => clearTimeout(timer));
  }
}
