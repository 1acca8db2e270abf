// @ts-check
/**
 * jest's node environment, measuring the CPU time each test file costs: the worker's own
 * (the tests, ts-jest's transform) and that of every process it started and waited for (the
 * `pulumi` CLI and all under it, `edge-service`, Python, Go). Wall time on a shared machine
 * doubles with the load; CPU seconds barely move, so they are what to compare between runs.
 * It hands its figure to the suite-times reporter through a file in the run's temp directory.
 * Not counted: daemons a test starts detached (PostgreSQL under `pg_ctl`, Patroni, etcd).
 */
const fs = require("node:fs");
const { TestEnvironment } = require("jest-environment-node");
const { cpuFile } = require("./suite-times");

/**
 * CPU seconds of this process and of its children that it has waited for (Linux: the `utime`,
 * `stime`, `cutime` and `cstime` of /proc/self/stat, in USER_HZ ticks, 100 a second; the command
 * name may hold spaces and parentheses, so the fields are counted from its last ')').
 * @returns {{ self: number, children: number | undefined }}
 */
function cpuNow() {
  const own = process.cpuUsage();
  const self = (own.user + own.system) / 1e6;
  try {
    const stat = fs.readFileSync("/proc/self/stat", "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // fields[0] is field 3 of proc(5) (state): cutime and cstime are fields 16 and 17.
    return { self, children: (Number(fields[13]) + Number(fields[14])) / 100 };
  } catch {
    return { self, children: undefined };
  }
}

class CpuEnvironment extends TestEnvironment {
  /**
   * @param {ConstructorParameters<typeof TestEnvironment>[0]} config
   * @param {ConstructorParameters<typeof TestEnvironment>[1]} context
   */
  constructor(config, context) {
    super(config, context);
    this.testPath = context.testPath;
    this.started = cpuNow();
  }

  /** @override */
  async teardown() {
    await super.teardown();
    const end = cpuNow();
    const seconds =
      end.self -
      this.started.self +
      (end.children === undefined || this.started.children === undefined
        ? 0
        : end.children - this.started.children);
    try {
      fs.writeFileSync(cpuFile(this.testPath), JSON.stringify({ seconds }));
    } catch {
      // No figure is better than a failed run: the reporter prints "?" for this file.
    }
  }
}

module.exports = CpuEnvironment;
