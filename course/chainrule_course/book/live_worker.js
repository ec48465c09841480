/* chainrule live code: the Web Worker that runs a page's cells in Pyodide (see live.js).
 *
 * It loads Pyodide's core and Graphviz in WebAssembly from the book's own _static/live/
 * folder, unpacks the engine's and the course's wheels into Pyodide's file system, and starts
 * the page's Python with chainrule_course.book.live.start_page, giving it Graphviz to draw with
 * (no `dot` program runs here) and freeing deep graphs one level at a time (a worker's stack is small). Then it runs
 * each cell it is sent with chainrule_course.book.live.run_cell, in one namespace for the page, and
 * posts back what the cell printed, showed or raised. Running in a worker keeps the page
 * responsive, and lets the page stop a runaway cell.
 *
 * A solution's cell (space "solution") runs with chainrule_course.book.live.run_solution_cell: it
 * sees the page's names but binds its own apart, so it never replaces a reader's answer.
 *
 * Where the page is cross-origin isolated (service_worker.js), "start" also carries
 * ``interrupt``, a SharedArrayBuffer of one byte: Pyodide's interrupt buffer. The page writes 2
 * (SIGINT) into it to stop the running cell with a KeyboardInterrupt, and every name is kept.
 *
 * Messages in:  {type: "start", base, wheels (file names, separated by spaces), interrupt?}, {type: "run", id, code, space ("page" or "solution")}
 * Messages out: {type: "ready", ms}, {type: "failed", message}, {type: "result", id, result, ms},
 *               {type: "crashed", id, message} (Pyodide died; the page starts a new worker)
 */
"use strict";

var python = null;
// chainrule_course.book.live, and what its start_page gave: the page's namespace, the names of the
// solutions' cells and the release of deep graphs.
var live = null, namespace = null, solutions = null, release = null;
var interrupt = null;
var queue = Promise.resolve();

var start = function (base, wheels, buffer) {
  var began = performance.now();
  importScripts(base + "pyodide/pyodide.js", base + "viz-standalone.js");
  var wheelBytes = wheels.split(" ").map(function (wheel) {
    return fetch(base + wheel).then(function (response) {
      if (!response.ok) throw new Error("could not fetch " + wheel + " (HTTP " + response.status + ")");
      return response.arrayBuffer();
    });
  });
  return Promise.all([self.loadPyodide({ indexURL: base + "pyodide/" }), self.Viz.instance()].concat(wheelBytes))
    .then(function (loaded) {
      var pyodide = loaded[0], viz = loaded[1];
      loaded.slice(2).forEach(function (bytes) { pyodide.unpackArchive(bytes, "wheel"); });
      if (buffer) {
        interrupt = new Uint8Array(buffer);
        pyodide.setInterruptBuffer(interrupt);
      }
      live = pyodide.pyimport("chainrule_course.book.live");
      var page = live.start_page(function (source) { return viz.renderString(source, { format: "svg" }); });
      namespace = page.get(0);
      solutions = page.get(1);
      release = page.get(2);
      page.destroy();
      python = pyodide;
      postMessage({ type: "ready", ms: Math.round(performance.now() - began) });
    })
    .catch(function (error) {
      postMessage({ type: "failed", message: String(error && error.message || error) });
    });
};

var run = function (id, code, space) {
  var began = performance.now();
  var result;
  try {
    var name = "<cell " + id + ">";
    var proxy = space === "solution"
      ? live.run_solution_cell(code, namespace, solutions, name, release)
      : live.run_cell(code, namespace, name, release);
    result = proxy.toJs({ dict_converter: Object.fromEntries });
    proxy.destroy();
  } catch (error) {
    if (!(error && error.type === "KeyboardInterrupt")) {
      // Pyodide itself failed (a fatal error): this interpreter is gone; the page restarts it.
      python = null;
      postMessage({ type: "crashed", id: id, message: String(error && error.message || error).split("\n")[0] });
      return;
    }
    result = { error: "KeyboardInterrupt: stopped" };  // Stop arrived outside the cell's own lines
  }
  if (interrupt) interrupt[0] = 0;  // a Stop that came after the cell ended stops nothing else
  postMessage({ type: "result", id: id, result: result, ms: Math.round(performance.now() - began) });
};

self.onmessage = function (event) {
  var message = event.data;
  if (message.type === "start") {
    queue = start(message.base, message.wheels, message.interrupt);
  } else if (message.type === "run") {
    queue = queue.then(function () {
      if (python) run(message.id, message.code, message.space);
      else postMessage({ type: "result", id: message.id, result: { error: "Python did not start" } });
    });
  }
};
