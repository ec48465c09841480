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

  // The page scripts: ES modules, loaded by <script type="module"> tags the build writes (site.js,
  // progress.js, drill.js, live.js) or imported by them (python.js, live_cells.js, live_answers.js,
  // live_editor.js). A module's names are its own; it hands another only what it exports, and
  // tests/repo/test_javascript.py checks that every name imported from one of them is exported by it,
  // and that no page module sets anything on window (or globalThis, or self: the same object).
  {
    files: [PAGES + "*.js"],
    ignores: [PAGES + "live_worker.js", PAGES + "service_worker.js"],
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: { ...globals.browser } },
    rules: {
      "no-restricted-syntax": ["error", {
        selector: "AssignmentExpression > MemberExpression.left[object.name=/^(window|globalThis|self)$/]",
        message: "A page module shares a name by exporting it, not on window.",
      }],
    },
  },
  // The explorables' widget stays a classic script: widget.py inlines it, in a plain <script>, into
  // every widget's HTML output, which a notebook shows too (JupyterLab, Colab's output frame, the
  // executed notebooks the book is built from): there an inline module could neither import nor be
  // imported, and the pages whose steps carry a widget run it from that HTML (drill.js, live_cells.js).
  // So it keeps its names inside its function, and defines window.chainruleExplorable once per page.
  {
    files: ["course/chainrule_course/explore/explorable.js"],
    languageOptions: { ecmaVersion: 2020, sourceType: "script", globals: { ...globals.browser } },
    rules: { "no-implicit-globals": "error" },
  },
  // The Web Worker that runs Pyodide (python.js starts it) stays a classic worker: Pyodide's and
  // Graphviz's scripts are classic scripts that it loads with importScripts, which a module worker
  // does not have; they define loadPyodide and Viz on self, which it reads as self.loadPyodide.
  {
    files: [PAGES + "live_worker.js"],
    languageOptions: { ecmaVersion: 2020, sourceType: "script", globals: { ...globals.worker } },
  },
  // The service worker, served from the site's root as service-worker.js: a classic worker, which every
  // browser with service workers registers (a module service worker needs {type: "module"} and a newer
  // browser, for no gain: it imports nothing).
  {
    files: [PAGES + "service_worker.js"],
    languageOptions: { ecmaVersion: 2020, sourceType: "script", globals: { ...globals.serviceworker } },
  },
  // Node's: the maths typeset at build time, and this file.
  {
    files: ["_ext/prerendered_math.js", "eslint.config.js", "tests/repo/script_links.cjs"],
    languageOptions: { ecmaVersion: 2022, sourceType: "commonjs", globals: { ...globals.node } },
  },
];
