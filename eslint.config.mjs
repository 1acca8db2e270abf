// Lint rules: typescript-eslint's recommended sets. The product's code (sdk/, service/,
// provider/, commands/, index.ts) gets the type-aware set (recommendedTypeChecked: no unsafe any, floating promises,
// misused promises...) and no `any` at all; tests, benchmarks and scripts the plain set.
// Formatting is prettier's job (npm run format); `npm run lint` checks both, tsc the types and
// dependency-cruiser the direction of dependencies (.dependency-cruiser.cjs).
import js from "@eslint/js";
import tseslint from "typescript-eslint";

const product = ["index.ts", "sdk/**/*.ts", "service/**/*.ts", "provider/**/*.ts", "commands/**/*.ts"];

export default tseslint.config(
  {
    ignores: [
      "dist/**",
      "node_modules/**",
      ".test-work/**",
      ".pulumi-state/**",
      "coverage/**",
      "examples/*/node_modules/**",
      "bench/tmp/**",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        require: "readonly",
        module: "writable",
        process: "readonly",
        __dirname: "readonly",
        console: "readonly",
      },
    },
    rules: {
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", destructuredArrayIgnorePattern: "^_" },
      ],
      // The serialized provider glue and the CommonJS scripts load modules with require on purpose.
      "@typescript-eslint/no-require-imports": "off",
    },
  },
  ...tseslint.configs.recommendedTypeChecked.map((config) => ({ ...config, files: product })),
  {
    files: product,
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      "@typescript-eslint/no-explicit-any": "error",
      // Lazy requires (the embedded service, the glue's runtime) are typed with `as typeof import(...)`.
      "@typescript-eslint/no-require-imports": "off",
      // An async function without await still promises its result (provider methods, parseEdgeConfig);
      // floating and misused promises stay errors.
      "@typescript-eslint/require-await": "off",
    },
  },
);
