/* chainrule's Python in the page: one interpreter per page, shared by Live code, the in-page
 * checks (live.js) and the drills (drill.js). The first of them that needs it calls start(base,
 * wheels); the others get the same Web Worker (live_worker.js, Pyodide with chainrule) and names.
 * Live code's Stop and Reset restart it for all (restart); onRestart's callbacks hear of it.
 *
 * At most one worker lives at any time. terminate() does not end a worker at once: Chromium lets
 * one busy in a loop run on for up to 2 s, beside a new one made at once. So each worker holds a
 * Web Lock, named after it ("chainrule-python-<page>-<n>"), while it lives, and the next worker is
 * made once the page gets that lock (or after 5 s; at once without Web Locks). What waited for
 * the old Python waits for the new one; a run asked of the old one ends {error: "Stopped.",
 * stdout: what it printed}, and never runs in the new one.
 *
 * call(module, name, args): a function of the course's Python package, its arguments as JSON (drill.js).
 *
 * run(code, space, onOutput): onOutput(text) hears what the code has printed so far, as the
 * worker streams it: a runaway cell's output outlives its Stop. Where the page is cross-origin
 * isolated (service_worker.js), interrupt() stops the running code with a KeyboardInterrupt and
 * every name is kept; elsewhere it returns false.
 *
 * An ES module: drill.js and live.js import these functions (the build loads no tag of its own for
 * it). It tells site.js that Python can run in this page, and when it starts (notePython).
 */
import { notePython } from "./site.js";

var state = {
  worker: null, ready: null, settle: null, pending: {}, counter: 0, generation: 0, buffer: null,
  gone: Promise.resolve(), made: 0, page: Math.random().toString(36).slice(2, 10)
};
var listeners = [];
var GONE_WAIT_MS = 5000;  // past Chromium's 2 s for a busy worker: a lock never granted delays no more

export function start(base, wheels) {
  if (state.ready) return state.ready;
  state.base = base;
  state.wheels = wheels;
  notePython(true);  // site.js: once Python runs, the page is never reloaded
  var generation = state.generation;
  var settle = {};
  var ready = state.ready = new Promise(function (resolve, reject) { settle.resolve = resolve; settle.reject = reject; });
  state.settle = settle;
  state.gone.then(function () {  // the worker before is gone: now this one
    if (generation === state.generation && state.ready === ready) spawn(settle);
  });
  ready.catch(function () {  // it could not start: end it, and a later call tries again
    if (state.ready !== ready) return;
    state.ready = null;
    if (state.worker) end(state.worker);
    state.worker = null;
  });
  return ready;
}

function spawn(settle) {
  state.made += 1;
  var name = "chainrule-python-" + state.page + "-" + state.made;  // the Web Lock it holds while it lives
  var worker = state.worker = new Worker(state.base + "live_worker.js", { name: name });
  worker.lockName = name;
  worker.onmessage = function (event) {
    if (state.worker === worker) onMessage(event.data, settle);  // nothing from a worker ended before
  };
  worker.onerror = function (event) { settle.reject(new Error(event.message || "the worker failed")); };
  state.buffer = window.crossOriginIsolated ? new Uint8Array(new SharedArrayBuffer(1)) : null;
  worker.postMessage({ type: "start", base: state.base, wheels: state.wheels, interrupt: state.buffer && state.buffer.buffer });
}

// Ends ``worker``; state.gone resolves once it no longer runs (its lock is free).
function end(worker) {
  if (state.buffer) state.buffer[0] = 2;  // a loop that sees the interrupt returns, and the worker ends at once
  state.buffer = null;
  worker.terminate();
  var locks = navigator.locks;
  if (!locks || !worker.lockName) { state.gone = Promise.resolve(); return; }
  var released = locks.request(worker.lockName, function () { return true; });
  var late = new Promise(function (resolve) { window.setTimeout(resolve, GONE_WAIT_MS); });
  state.gone = Promise.race([released, late]).catch(function () { return true; });
}

function onMessage(message, settle) {
  if (message.type === "ready") {
    // How this start went, for the tests and the benchmark: from the kept snapshot or from scratch.
    document.documentElement.setAttribute("data-python-start", message.restored ? "snapshot" : "scratch");
    settle.resolve(message.ms);
  } else if (message.type === "failed") {
    settle.reject(new Error(message.message));
  } else if (message.type === "output") {
    var running = state.pending[message.id];
    if (!running) return;
    running.printed += message.text;
    if (running.onOutput) running.onOutput(running.printed);
  } else if (message.type === "result" || message.type === "crashed") {
    var waiting = state.pending[message.id];
    delete state.pending[message.id];
    if (message.type === "crashed") {
      restart("crashed", message.message);
      if (waiting) waiting.resolve({ error: "Python crashed while running this cell: " + message.message });
    } else if (waiting) waiting.resolve(message.result);
  }
}

// Runs ``code`` in the page's namespace (space "page") or apart ("solution"): its result. A
// restart before it reaches the worker ends it too: it never runs in the next Python.
export function run(code, space, onOutput) {
  return send({ type: "run", code: code, space: space || "page" }, onOutput);
}

// Calls ``name`` of the Python module ``module`` with ``args`` (a list of JSON values), outside the
// page's namespace; resolves to what it returns (JSON's values), rejects with its error. The
// arguments travel as JSON text, decoded by Python's json: never spliced into Python source.
export function call(module, name, args) {
  return send({ type: "call", module: module, name: name, args: JSON.stringify(args) }).then(function (result) {
    if (result.error) throw new Error(result.error);
    return result.value;
  });
}

// Posts ``message`` to the worker once Python is ready, under a new id: the worker's result.
function send(message, onOutput) {
  var ready = state.ready;
  if (!ready) return Promise.reject(new Error("Python has not started"));
  state.counter += 1;
  var id = state.counter, generation = state.generation;
  message.id = id;
  return new Promise(function (resolve, reject) {
    var running = state.pending[id] = { resolve: resolve, onOutput: onOutput, printed: "", posted: false };
    ready.then(function () {
      if (generation !== state.generation || state.pending[id] !== running) return;
      running.posted = true;
      state.worker.postMessage(message);
    }, function (error) {
      if (state.pending[id] === running) delete state.pending[id];
      reject(error);
    });
  });
}

// A new interpreter; what ran in the old one gets {error: "Stopped.", stdout: what it printed}.
// ``why``: "stopped", "reset" or "crashed", for the callbacks.
export function restart(why, detail) {
  state.generation += 1;
  var old = state.worker, settle = state.settle;
  state.worker = null;
  state.ready = null;
  if (old) end(old);
  var pending = state.pending;
  state.pending = {};
  Object.keys(pending).forEach(function (id) { pending[id].resolve({ error: "Stopped.", stdout: pending[id].printed }); });
  var ready = start(state.base, state.wheels);
  if (settle) settle.resolve(ready);  // who waited for the old Python (it was still starting) waits for this one
  listeners.forEach(function (listener) { listener(why, detail, ready); });
  return ready;
}

export function onRestart(listener) { listeners.push(listener); }

// Interrupts the running code, where the page is isolated: false where it is not.
export function interrupt() {
  if (!state.buffer) return false;
  state.buffer[0] = 2;  // SIGINT, read by Pyodide between the lines of the running code
  return true;
}

// The runs the worker has been given and not answered yet.
export function inFlight() { return Object.keys(state.pending).filter(function (id) { return state.pending[id].posted; }); }

export function isRunning(id) { return Boolean(state.pending[id]); }

// Whether Python has been started (and not failed to start).
export function started() { return Boolean(state.ready); }

notePython(false);  // site.js: Python can run in this page
