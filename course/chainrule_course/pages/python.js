/* chainrule's Python in the page: one interpreter per page, shared by Live code, the in-page
 * checks (live.js) and the drills (drill.js).
 *
 * The first of them that needs Python calls start(base, wheels); the others get the same
 * Web Worker (live_worker.js, Pyodide with chainrule) and the same names. Two Pythons in one
 * page cost twice the start-up time and memory; one is enough, since every run waits its turn
 * in the worker anyway. Live code's Stop and Reset restart it for all of them (restart), and
 * the callbacks given to onRestart hear of it, so that a drill imports its module again.
 *
 * Where the page is cross-origin isolated (service_worker.js), interrupt() stops the running
 * code with a KeyboardInterrupt and every name is kept; elsewhere it returns false.
 */
(function () {
  "use strict";
  var state = { worker: null, ready: null, pending: {}, counter: 0, generation: 0, buffer: null };
  var listeners = [];

  function start(base, wheels) {
    if (state.ready) return state.ready;
    state.base = base;
    state.wheels = wheels;
    window.chainrulePythonStarted = true;  // site.js: once Python runs, the page is never reloaded
    var worker = state.worker = new Worker(base + "live_worker.js");
    state.ready = new Promise(function (resolve, reject) {
      worker.onmessage = function (event) { onMessage(event.data, resolve, reject); };
      worker.onerror = function (event) { reject(new Error(event.message || "the worker failed")); };
    });
    state.buffer = window.crossOriginIsolated ? new Uint8Array(new SharedArrayBuffer(1)) : null;
    worker.postMessage({ type: "start", base: base, wheels: wheels, interrupt: state.buffer && state.buffer.buffer });
    state.ready.catch(function () { if (state.worker === worker) state.ready = null; });  // a later call tries again
    return state.ready;
  }

  function onMessage(message, resolve, reject) {
    if (message.type === "ready") {
      // How this start went, for the tests and the benchmark: from the kept snapshot or from scratch.
      document.documentElement.setAttribute("data-python-start", message.restored ? "snapshot" : "scratch");
      resolve(message.ms);
    }
    else if (message.type === "failed") reject(new Error(message.message));
    else if (message.type === "result" || message.type === "crashed") {
      var waiting = state.pending[message.id];
      delete state.pending[message.id];
      if (message.type === "crashed") {
        restart("crashed", message.message);
        if (waiting) waiting({ error: "Python crashed while running this cell: " + message.message });
      } else if (waiting) waiting(message.result);
    }
  }

  // Runs ``code`` in the page's namespace (space "page") or apart ("solution"): its result.
  function run(code, space) {
    var ready = state.ready || Promise.reject(new Error("Python has not started"));
    return ready.then(function () {
      return new Promise(function (resolve) {
        state.counter += 1;
        state.pending[state.counter] = resolve;
        state.worker.postMessage({ type: "run", id: state.counter, code: code, space: space || "page" });
      });
    });
  }

  // A new interpreter; what ran in the old one gets {error: "Stopped."}. ``why``: "stopped",
  // "reset" or "crashed", for the callbacks.
  function restart(why, detail) {
    state.generation += 1;
    if (state.worker) state.worker.terminate();
    var pending = state.pending;
    state.pending = {};
    state.ready = null;
    Object.keys(pending).forEach(function (id) { pending[id]({ error: "Stopped." }); });
    var ready = start(state.base, state.wheels);
    listeners.forEach(function (listener) { listener(why, detail, ready); });
    return ready;
  }

  window.chainrulePython = {
    start: start,
    run: run,
    restart: restart,
    onRestart: function (listener) { listeners.push(listener); },
    interrupt: function () {
      if (!state.buffer) return false;
      state.buffer[0] = 2;  // SIGINT, read by Pyodide between the lines of the running code
      return true;
    },
    inFlight: function () { return Object.keys(state.pending); },
    isRunning: function (id) { return Boolean(state.pending[id]); },
    get isolated() { return Boolean(state.buffer); },
    get generation() { return state.generation; },
    get started() { return Boolean(state.worker); }
  };
})();
