// Lint: type-aware rules for the TypeScript (a floating or misused promise can kill the user's Node-RED),
// the recommended rules for the editor scripts, which run in the browser beside Node-RED's RED and jQuery.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import html from 'eslint-plugin-html';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig(
  // .demo/ is npm start's user directory (git-ignored).
  { ignores: ['dist/', 'coverage/', 'node_modules/', '.demo/'] },
  js.configs.recommended,
  // A timer that a callback clears may be read before it is set.
  { rules: { 'prefer-const': ['error', { ignoreReadBeforeAssign: true }] } },
  {
    files: ['**/*.ts', 'scripts/**/*.js'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      globals: globals.node,
      parserOptions: {
        // Every script is plain JavaScript outside the tsconfig projects; there are more than the default eight.
        projectService: { allowDefaultProject: ['scripts/*.js'], maximumDefaultProjectFileMatchCount_THIS_WILL_SLOW_DOWN_LINTING: 20 },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      // `import x = require(...)` is how TypeScript imports the nodes' `export =` modules.
      '@typescript-eslint/no-require-imports': ['error', { allowAsImport: true }],
      // `const node = this` is the Node-RED convention for a node's constructor.
      '@typescript-eslint/no-this-alias': ['error', { allowedNames: ['node'] }],
      // A rejection passes on what was caught, as `throw` may.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', ignoreRestSiblings: true }],
    },
  },
  {
    // Tests drive untyped APIs (the test helper's nodes, supertest, page.evaluate); the scripts are plain JS.
    files: ['test/**/*.ts', 'scripts/**/*.js'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    files: ['scripts/**/*.js'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // Runs functions inside the browser page.
    files: ['scripts/screenshot.js'],
    languageOptions: { globals: globals.browser },
  },
  {
    files: ['resources/*.js', 'nodes/*.html'],
    plugins: { html },
    languageOptions: {
      sourceType: 'script',
      globals: { ...globals.browser, RED: 'readonly', $: 'readonly' },
    },
  },
);
