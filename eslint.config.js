// ESLint's flat config for every script the repository ships (tests/repo/test_javascript.py runs
// it in `make check`): the recommended rules, and for each file the globals of where it runs.
// Run it alone with `node_modules/.bin/eslint .` from the repository's root.
"use strict";

const js = require("@eslint/js");
const globals = require("globals");

const PAGES = "course/chainrule_course/pages/";

module.exports = [
  // Not ours, or not sources: npm's packages, the built site (it holds copies of these scripts),
  // the caches, the venvs and the assignments made from the book.
  { ignores: ["node_modules/", "_build/", ".cache/", ".venv/", ".venv-grade/", "dist/", "student/"] },

  js.configs.recommended,

  // The pages' classic scripts, loaded by <script> tags the build writes: ES5 style, plus what
  // ES2020 added that they use (import() of the editor, catch without a binding).
  {
    files: [PAGES + "*.js", "course/chainrule_course/explore/explorable.js"],
    languageOptions: { ecmaVersion: 2020, sourceType: "script", globals: { ...globals.browser } },
  },
  // The scripts of a page share its window: each keeps its names inside its own function, and
  // hands another script only what it sets on window by name (window.chainrulePython, ...,
  // which tests/repo/test_javascript.py matches up). The workers below have a global scope each.
  {
    files: [PAGES + "*.js", "course/chainrule_course/explore/explorable.js"],
    ignores: [PAGES + "live_worker.js", PAGES + "service_worker.js", PAGES + "live_editor.js"],
    rules: { "no-implicit-globals": "error" },
  },
  // The Web Worker that runs Pyodide (python.js starts it): Pyodide's and Graphviz's scripts,
  // loaded with importScripts, define loadPyodide and Viz on self, which it reads as self.loadPyodide.
  {
    files: [PAGES + "live_worker.js"],
    languageOptions: { globals: { ...globals.worker } },
  },
  // The service worker, served from the site's root as service-worker.js.
  {
    files: [PAGES + "service_worker.js"],
    languageOptions: { globals: { ...globals.serviceworker } },
  },
  // The editor: an ES module that live_cells.js imports.
  {
    files: [PAGES + "live_editor.js"],
    languageOptions: { sourceType: "module" },
  },
  // Node's: the maths typeset at build time, and this file.
  {
    files: ["_ext/prerendered_math.js", "eslint.config.js"],
    languageOptions: { ecmaVersion: 2022, sourceType: "commonjs", globals: { ...globals.node } },
  },
];
