/** @type {import('jest').Config} */
module.exports = {
  // jest's node environment, measuring each file's CPU time for the suite-times reporter.
  testEnvironment: "<rootDir>/tests/support/cpu-environment.js",
  roots: ["<rootDir>/tests"],
  testMatch: ["**/*.test.ts"],
  // Transpiled only: the types of the tests (and of everything else) are checked once by tsc in
  // `npm test`'s pretest (and `npm run lint`), not again per test file by ts-jest's language
  // service, which cost every worker several seconds of CPU per file.
  transform: { "^.+\\.ts$": ["ts-jest", { tsconfig: "tsconfig.json", isolatedModules: true }] },
  // Engine tests start real `pulumi` processes; give them room, and run at most two files at once.
  testTimeout: 300000,
  maxWorkers: 2,
  modulePathIgnorePatterns: ["<rootDir>/dist/", "<rootDir>/examples/.*/node_modules/"],
  // The run leaves no process and no edge-* temp directory behind (asserted at the end).
  globalSetup: "<rootDir>/tests/support/global-setup.ts",
  globalTeardown: "<rootDir>/tests/support/global-teardown.ts",
  // Each test file's time at the end of the run (CI's log shows where the time goes).
  reporters: ["default", "<rootDir>/tests/support/suite-times.js"],
};
