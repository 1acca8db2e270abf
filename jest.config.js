/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: "node",
  roots: ["<rootDir>/tests"],
  testMatch: ["**/*.test.ts"],
  transform: { "^.+\\.ts$": ["ts-jest", { tsconfig: "tsconfig.json", diagnostics: { warnOnly: false } }] },
  // Engine tests start real `pulumi` processes; give them room, and run at most two files at once.
  testTimeout: 300000,
  maxWorkers: 2,
  modulePathIgnorePatterns: ["<rootDir>/dist/", "<rootDir>/examples/.*/node_modules/"],
  // The run leaves no process and no edge-* temp directory behind (asserted at the end).
  globalSetup: "<rootDir>/tests/support/global-setup.ts",
  globalTeardown: "<rootDir>/tests/support/global-teardown.ts",
};
