/**
 * `npm run test:unit`: the pure suites (model, plans, lifecycles, checks, declarative loading),
 * no build, no engine, no server; ts-jest only transpiles (types are `npm run lint`'s job), so
 * the loop takes seconds. `npm test` runs these and everything else.
 */
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: "node",
  roots: ["<rootDir>/tests/provider"],
  testMatch: ["**/*.test.ts"],
  transform: { "^.+\\.ts$": ["ts-jest", { tsconfig: "tsconfig.json", isolatedModules: true }] },
  // A few plan suites take seconds on a loaded machine; jest's 5-s default would fail them.
  testTimeout: 60_000,
  modulePathIgnorePatterns: ["<rootDir>/dist/", "<rootDir>/examples/.*/node_modules/"],
};
