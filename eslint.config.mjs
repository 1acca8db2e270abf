// Lint rules: typescript-eslint's recommended set, tuned for this codebase. Formatting is
// prettier's job (npm run format); `npm run lint` checks both, and tsc --noEmit the types.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

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
);
