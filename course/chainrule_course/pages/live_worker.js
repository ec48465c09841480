/* chainrule live code: the Web Worker that runs a page's cells in Pyodide (see live.js).
 *
 * It loads Pyodide's core and Graphviz in WebAssembly from the book's own _static/live/
 * folder, unpacks the engine's and the course's wheels into Pyodide's file system, and starts
 * the page's Python with chainrule_course.pages.live.start_page, giving it Graphviz to draw with
 * (no `dot` program runs here) and freeing deep graphs one level at a time (a worker's stack is small). Then it runs
 * each cell it is sent with chainrule_course.pages.live.run_cell, in one namespace for the page, and
 * posts back what the cell printed, showed or raised. Running in a worker keeps the page
 * responsive, and lets the page stop a runaway cell.
 *
 * A solution's cell (space "solution") runs with chainrule_course.pages.live.run_solution_cell: it
 * sees the page's names but binds its own apart, so it never replaces a reader's answer.
 *
 * Where the page is cross-origin isolated (service_worker.js), "start" also carries
 * ``interrupt``, a SharedArrayBuffer of one byte: Pyodide's interrupt buffer. The page writes 2
 * (SIGINT) into it to stop the running cell with a KeyboardInterrupt, and every name is kept.
 *
 * While a cell runs, what it prints goes to the page as it comes ({type: "output"}: the text
 * printed since the last one; every 50 ms at most once it prints fast: live.stream_to), so that
 * a cell stopped by a new worker (Stop where Python cannot be interrupted) keeps what it printed.
 *
 * The worker holds the Web Lock named after it (self.name, given by python.js) as long as it
 * lives: the page makes the next worker once that lock is free, so two never run at once.
 *
 * A call ({type: "call"}, python.js's call) runs one function of the course's package, apart from the page's
 * namespace: its arguments and its value travel as JSON, and its result is {value} or {error}.
 *
 * Messages in:  {type: "start", base, wheels (file names, separated by spaces), interrupt?}, {type: "run", id, code, space ("page" or "solution")},
 *               {type: "call", id, module, name, args (a JSON list)}
 * Messages out: {type: "ready", ms}, {type: "failed", message}, {type: "output", id, text},
 *               {type: "result", id, result, ms},
 *               {type: "crashed", id, message} (Pyodide died; the page starts a new worker)
 */
"use strict";

var python = null;
// chainrule_course.pages.live, and what its start_page gave: the page's namespace, the names of the
// solutions' cells and the release of deep graphs.
var live = null, namespace = null, solutions = null, release = null;
var interrupt = null;
var queue = Promise.resolve();
var current = null;  // the id of the run under way: its output goes to the page under that id

if (self.name && self.navigator && navigator.locks) {  // held until this worker ends (see above)
  navigator.locks.request(self.name, function () { return new Promise(function () {}); }).catch(function () {});
}

var start = function (base, wheels, buffer) {
  var began = performance.now();
  importScripts(base + "pyodide/pyodide.js");
  var wheelBytes = Promise.all(wheels.split(" ").map(function (wheel) {
    return fetch(base + wheel).then(function (response) {
      if (!response.ok) throw new Error("could not fetch " + wheel + " (HTTP " + response.status + ")");
      return response.arrayBuffer();
    });
  }));
  var snapshot = wheelBytes.then(function (bytes) { return findSnapshot(base, bytes); });
  var pyodide = snapshot.then(function (found) { return loadPython(base, found); });
  // Graphviz (1.4 MB of script) once the wheels and the snapshot are on their way, not before.
  importScripts(base + "viz-standalone.js");
  return Promise.all([pyodide, self.Viz.instance(), wheelBytes, snapshot])
    .then(function (loaded) {
      var pyodide = loaded[0], viz = loaded[1], found = loaded[3];
      loaded[2].forEach(function (bytes) { pyodide.unpackArchive(bytes, "wheel"); });
      if (found.restored) {
        pyodide.runPython("import random\nrandom.seed()");  // else every page would draw the snapshot's numbers
      } else if (found.key) {
        pyodide.runPython(SNAPSHOT_IMPORTS);
        keepSnapshot(found.key, pyodide.makeMemorySnapshot());
      }
      if (buffer) {
        interrupt = new Uint8Array(buffer);
        pyodide.setInterruptBuffer(interrupt);
      }
      live = pyodide.pyimport("chainrule_course.pages.live");
      live.stream_to(function (text) {  // what a cell prints, to the page as it comes
        if (current !== null) postMessage({ type: "output", id: current, text: text });
      });
      var page = live.start_page(function (source) { return viz.renderString(source, { format: "svg" }); });
      namespace = page.get(0);
      solutions = page.get(1);
      release = page.get(2);
      page.destroy();
      python = pyodide;
      postMessage({ type: "ready", ms: Math.round(performance.now() - began), restored: found.restored });
    })
    .catch(function (error) {
      postMessage({ type: "failed", message: String(error && error.message || error) });
    });
};

// --- a started Python, kept -------------------------------------------------------------
// Starting Python takes about 2 s of work on every page, the download aside. So the first start
// imports the engine and the course's page modules and keeps a snapshot of the interpreter's
// memory (Pyodide's makeMemorySnapshot, about 25 MB) in the browser's Cache Storage; every later
// start, on any chapter, restores it in about 0.2 s. The snapshot is keyed on the wheels' bytes
// and Pyodide's lock file, so a new build makes a new one, and the old one is deleted.
var SNAPSHOT_CACHE = "chainrule-python-snapshot";
var SNAPSHOT_IMPORTS = "import chainrule, chainrule_course.pages.live, chainrule_course.drills.page\n" +
  "import chainrule_course.exercises.feedback";

function findSnapshot(base, wheelBytes) {
  if (!self.caches || !self.crypto || !self.crypto.subtle) return { key: null };
  return fetch(base + "pyodide/pyodide-lock.json").then(function (response) { return response.arrayBuffer(); })
    .then(function (lock) {
      var parts = [lock].concat(wheelBytes).map(function (bytes) { return new Uint8Array(bytes); });
      var all = new Uint8Array(parts.reduce(function (size, part) { return size + part.length; }, 0));
      parts.reduce(function (at, part) { all.set(part, at); return at + part.length; }, 0);
      return self.crypto.subtle.digest("SHA-256", all);
    })
    .then(function (digest) {
      var hex = Array.prototype.map.call(new Uint8Array(digest), function (b) { return (b + 256).toString(16).slice(1); });
      var key = new URL("snapshot-" + hex.join("").slice(0, 24) + ".bin", base).href;
      return caches.open(SNAPSHOT_CACHE).then(function (cache) { return cache.match(key); })
        .then(function (kept) { return kept ? kept.arrayBuffer() : null; })
        .then(function (bytes) { return { key: key, bytes: bytes && new Uint8Array(bytes) }; });
    })
    .catch(function () { return { key: null }; });  // no storage here: start as if there were none
}

// Python from the snapshot when there is one (and from scratch if it cannot be restored).
function loadPython(base, found) {
  var indexURL = base + "pyodide/";
  if (!found.bytes) return self.loadPyodide({ indexURL: indexURL, _makeSnapshot: Boolean(found.key) });
  return self.loadPyodide({ indexURL: indexURL, _loadSnapshot: found.bytes }).then(function (pyodide) {
    found.restored = true;
    return pyodide;
  }, function () {
    caches.open(SNAPSHOT_CACHE).then(function (cache) { return cache.delete(found.key); });
    found.key = null;
    return self.loadPyodide({ indexURL: indexURL });
  });
}

function keepSnapshot(key, bytes) {
  caches.open(SNAPSHOT_CACHE).then(function (cache) {
    return cache.keys().then(function (old) {
      return Promise.all(old.map(function (request) { return cache.delete(request); }));
    }).then(function () {
      return cache.put(key, new Response(bytes, { headers: { "Content-Type": "application/octet-stream" } }));
    });
  }).catch(function () { /* storage full or refused: the next page starts from scratch */ });
}

var run = function (id, code, space) {
  answer(id, false, function () {
    var name = "<cell " + id + ">";
    var proxy = space === "solution"
      ? live.run_solution_cell(code, namespace, solutions, name, release)
      : live.run_cell(code, namespace, name, release);
    var result = proxy.toJs({ dict_converter: Object.fromEntries });
    proxy.destroy();
    return result;
  });
};

// python.js's call: the function ``name`` of the module ``module``, with ``args``, a JSON list, as
// its arguments; its result comes back as JSON too. CALLER, made once per interpreter, is the only
// Python source here, and it holds no value: the arguments never become source.
var CALLER = "import importlib, json\n" +
  "def call(module, name, arguments):\n" +
  "    return json.dumps(getattr(importlib.import_module(module), name)(*json.loads(arguments)))\n" +
  "call";
var caller = null;

var call = function (id, module, name, args) {
  answer(id, true, function () {
    if (!caller) caller = python.runPython(CALLER, { globals: python.toPy({}) });
    return { value: JSON.parse(caller(module, name, args)) };
  });
};

// Posts what ``work`` returns as the result of the message ``id``. A KeyboardInterrupt (Stop) is
// its error, and so is any other Python exception when ``pythonErrors`` (run_cell reports a cell's
// own); anything else is Pyodide itself failing (a fatal error): this interpreter is gone, and the
// page restarts it.
function answer(id, pythonErrors, work) {
  var began = performance.now();
  var result;
  current = id;
  try {
    result = work();
  } catch (error) {
    current = null;
    var type = error && error.type;
    if (type === "KeyboardInterrupt") {
      result = { error: "KeyboardInterrupt: stopped" };  // Stop arrived outside the cell's own lines
    } else if (pythonErrors && typeof type === "string") {
      result = { error: lastLine(error.message) };
    } else {
      python = null;
      caller = null;
      postMessage({ type: "crashed", id: id, message: String(error && error.message || error).split("\n")[0] });
      return;
    }
  }
  current = null;
  if (interrupt) interrupt[0] = 0;  // a Stop that came after the cell ended stops nothing else
  postMessage({ type: "result", id: id, result: result, ms: Math.round(performance.now() - began) });
}

// A traceback's last line: "ValueError: the message".
function lastLine(text) {
  var lines = String(text).trim().split("\n");
  return lines[lines.length - 1];
}

self.onmessage = function (event) {
  var message = event.data;
  if (message.type === "start") {
    queue = start(message.base, message.wheels, message.interrupt);
  } else if (message.type === "run" || message.type === "call") {
    queue = queue.then(function () {
      if (!python) postMessage({ type: "result", id: message.id, result: { error: "Python did not start" } });
      else if (message.type === "run") run(message.id, message.code, message.space);
      else call(message.id, message.module, message.name, message.args);
    });
  }
};
