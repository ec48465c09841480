"""The book's pages: numbers that cells compute, glued into the prose, and Live code.

Built on: the engine, chainrule.figures (the page's Python draws them with Graphviz in WebAssembly).

The modules, in order: each imports only the engine and modules above it in this list
(``tests/repo/test_layers.py`` checks it):

* ``glue`` -- numbers that a chapter's cells compute, glued into its prose (myst-nb's ``glue``)
* ``live`` -- runs a page's cells in the browser's Python, for the book's "Live code" mode

Live code's browser side ships here too: ``live.js`` (the page), ``live_worker.js`` (the
Web Worker that runs Pyodide) and ``live.css``. ``_ext/live_code.py`` serves them.
"""
