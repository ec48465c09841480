/* chainrule live code: run a page's code cells in the browser, with Python in WebAssembly.
 *
 * The page carries this script (a few KB) and nothing else of the runtime. Pressing
 * "Live code" starts a Web Worker (live_worker.js) that loads Pyodide's core, Graphviz
 * in WebAssembly and chainrule's wheel from the book's own _static/live/ folder: no
 * CDN, no server. Every code cell (myst-nb's div.cell) then becomes an editable text
 * box with a "Run cell" button, and its output goes into an element [data-live-output]
 * under it. The cells share one interpreter, in the order they run, as in a notebook.
 * "Run all cells" runs them top to bottom and stops at an error; "Stop" ends a cell
 * that runs too long (it restarts Python: the cells must run again); "Reset" restores
 * the page's code and starts afresh. Cells tagged no-live (they need numpy, PyTorch or
 * JAX, which the page's Python does not have) say so, with the Colab link.
 */
(function () {
  "use strict";
  var me = document.currentScript;
  var base = new URL(".", me.src).href;
  var wheel = me.getAttribute("data-wheel");
  // The page loads this script in its head: wait for the page's cells.
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { setUpPage(base, wheel); });
  } else {
    setUpPage(base, wheel);
  }
  return;

  function setUpPage(base, wheel) {
    var article = document.querySelector("article.bd-article") || document.querySelector("main") || document.body;
    var cells = Array.prototype.slice.call(article.querySelectorAll("div.cell"))
      .filter(function (cell) { return cell.querySelector(".cell_input pre"); });
    if (!cells.length || !wheel) return;
    // The page's state: its controls, the interpreter, the cells that run.
    var page = {
      base: base, wheel: wheel, cells: cells, entries: [], controls: buildPanel(article),
      worker: null, ready: null, running: null, pending: {}, counter: 0, pressedAt: 0, firstOutput: null,
      colab: document.querySelector('a[href*="colab.research.google.com"]')
    };
    wirePanel(page);
  }

  function makeButton(text, action) {
    var element = document.createElement("button");
    element.type = "button";
    element.textContent = text;
    element.setAttribute("data-live-action", action);
    return element;
  }

  // The panel under the title: Live code, then Run all cells, Stop, Reset and the status line.
  function buildPanel(article) {
    var panel = document.createElement("div");
    panel.className = "cr-live";
    panel.setAttribute("role", "region");
    panel.setAttribute("aria-label", "Live code");
    var controls = {
      live: makeButton("Live code", "live"), runAll: makeButton("Run all cells", "run-all"),
      stop: makeButton("Stop", "stop"), reset: makeButton("Reset", "reset"),
      note: document.createElement("span"), status: document.createElement("p")
    };
    controls.note.className = "cr-live-note";
    controls.note.textContent = "Run and edit this page's Python in your browser (it downloads about 13 MB, once).";
    controls.status.className = "cr-live-status";
    controls.status.setAttribute("aria-live", "polite");
    controls.status.setAttribute("data-live-status", "");
    [controls.runAll, controls.stop, controls.reset].forEach(function (b) { b.hidden = true; });
    [controls.live, controls.runAll, controls.stop, controls.reset, controls.note, controls.status]
      .forEach(function (e) { panel.appendChild(e); });
    var heading = article.querySelector("h1");
    if (heading && heading.parentNode) heading.parentNode.insertBefore(panel, heading.nextSibling);
    else article.insertBefore(panel, article.firstChild);
    return controls;
  }

  function say(page, text) { page.controls.status.textContent = text; }

  function needs(code) {
    if (/\bjax\b/.test(code)) return "JAX";
    if (/\btorch\b/.test(code)) return "PyTorch";
    return "numpy and matplotlib";
  }

  // --- the interpreter -------------------------------------------------------------
  function startWorker(page) {
    page.worker = new Worker(page.base + "live_worker.js");
    page.ready = new Promise(function (resolve, reject) {
      page.worker.onmessage = function (event) { onWorkerMessage(page, event.data, resolve, reject); };
      page.worker.onerror = function (event) { reject(new Error(event.message || "the worker failed")); };
    });
    page.worker.postMessage({ type: "start", base: page.base, wheel: page.wheel });
    page.ready.then(function (ms) {
      say(page, "Python is ready (" + (ms / 1000).toFixed(1) + " s). Run a cell, or Run all cells.");
    }, function (error) {
      say(page, "Python could not start: " + error.message);
    });
  }

  function onWorkerMessage(page, message, resolve, reject) {
    if (message.type === "ready") resolve(message.ms);
    else if (message.type === "failed") reject(new Error(message.message));
    else if (message.type === "result" && page.pending[message.id]) {
      page.pending[message.id](message.result);
      delete page.pending[message.id];
    } else if (message.type === "crashed") {
      var waiting = page.pending[message.id];
      delete page.pending[message.id];
      restart(page, "Python crashed (" + message.message + ") and has restarted; " +
              "the cells above must run again.");
      if (waiting) waiting({ error: "Python crashed while running this cell: " + message.message });
    }
  }

  function execute(page, code) {
    return page.ready.then(function () {
      return new Promise(function (resolve) {
        page.counter += 1;
        page.pending[page.counter] = resolve;
        page.worker.postMessage({ type: "run", id: page.counter, code: code });
      });
    });
  }

  function restart(page, message) {
    if (page.worker) page.worker.terminate();
    Object.keys(page.pending).forEach(function (id) { page.pending[id]({ error: "Stopped." }); });
    page.pending = {};
    page.running = null;
    page.controls.stop.hidden = true;
    startWorker(page);
    say(page, message);
  }

  // --- the cells ---------------------------------------------------------------------
  // A cell that needs what the page's Python lacks says so, with the chapter's Colab link.
  function skipCell(page, cell, input, original, output) {
    var line = document.createElement("p");
    line.className = "cr-live-skip";
    line.appendChild(document.createTextNode("This cell needs " + needs(original) + "; run it in Colab"));
    if (page.colab) {
      var link = document.createElement("a");
      link.href = page.colab.href;
      link.textContent = " (open this chapter in Colab)";
      line.appendChild(link);
    }
    line.appendChild(document.createTextNode("."));
    output.appendChild(line);
    input.parentNode.insertBefore(output, input.nextSibling);
    cell.setAttribute("data-live-state", "skipped");
    return null;
  }

  function setUpCell(page, cell, index) {
    var input = cell.querySelector(".cell_input");
    var original = cell.querySelector(".cell_input pre").textContent.replace(/\n$/, "");
    var output = document.createElement("div");
    output.className = "cr-live-output";
    output.setAttribute("data-live-output", "");
    output.setAttribute("aria-live", "polite");
    if (cell.classList.contains("tag_no-live")) return skipCell(page, cell, input, original, output);
    var editor = document.createElement("textarea");
    editor.className = "cr-live-editor";
    editor.value = original;
    editor.rows = Math.min(30, original.split("\n").length + 1);
    editor.spellcheck = false;
    editor.setAttribute("aria-label", "Code of cell " + (index + 1));
    var runButton = makeButton("Run cell", "run-cell");
    runButton.setAttribute("aria-label", "Run cell " + (index + 1));
    var box = document.createElement("div");
    box.className = "cr-live-cell";
    box.appendChild(editor);
    box.appendChild(runButton);
    input.parentNode.insertBefore(box, input.nextSibling);
    box.parentNode.insertBefore(output, box.nextSibling);
    var entry = { cell: cell, editor: editor, output: output, original: original, index: index };
    runButton.addEventListener("click", function () { runCells(page, [entry]); });
    editor.addEventListener("keydown", function (event) {
      if (event.key === "Enter" && (event.shiftKey || event.ctrlKey)) {
        event.preventDefault();
        runCells(page, [entry]);
      }
    });
    return entry;
  }

  function showResult(page, entry, result) {
    var output = entry.output;
    output.textContent = "";
    var stream = (result.stdout || "") + (result.stderr || "");
    var add = function (tag, className, text) {
      var element = document.createElement(tag);
      element.className = className;
      element.textContent = text;
      output.appendChild(element);
      return element;
    };
    if (stream) add("pre", "cr-live-stream", stream.replace(/\n$/, ""));
    if (result.error) add("pre", "cr-live-error", result.error);
    if (result.text) add("pre", "cr-live-result", result.text);
    if (result.html) {
      var shown = add("div", "cr-live-html", "");
      shown.innerHTML = result.html;
      if (window.chainruleExplorable) window.chainruleExplorable.setupAll(shown);
    }
    entry.cell.setAttribute("data-live-state", result.error ? "error" : "done");
    if (page.firstOutput === null) {
      page.firstOutput = (performance.now() - page.pressedAt) / 1000;
      document.documentElement.setAttribute("data-live-first-output", page.firstOutput.toFixed(2));
    }
  }

  // Runs the cells of ``list`` one after another, after whatever runs now; stops at an error.
  function runCells(page, list) {
    var chain = page.running || Promise.resolve(true);
    page.running = chain.then(function () {
      return list.reduce(function (previous, entry) {
        return previous.then(function (goOn) {
          if (!goOn) return false;
          entry.cell.setAttribute("data-live-state", "running");
          entry.output.textContent = "Running\u2026";
          page.controls.stop.hidden = false;
          return execute(page, entry.editor.value).then(function (result) {
            showResult(page, entry, result);
            var expected = entry.cell.classList.contains("tag_raises-exception");
            return !result.error || expected || list.length === 1;
          });
        });
      }, Promise.resolve(true));
    }).then(function (finished) {
      page.controls.stop.hidden = true;
      page.running = null;
      if (list.length > 1) {
        say(page, finished ? "All cells ran." : "Stopped at a cell that raised an error; fix it and run again.");
      }
      return finished;
    }, function (error) {
      page.running = null;
      say(page, "Python stopped: " + error.message);
    });
    return page.running;
  }

  // --- the panel's buttons -------------------------------------------------------------
  function wirePanel(page) {
    var controls = page.controls;
    controls.live.addEventListener("click", function () {
      page.pressedAt = performance.now();
      controls.live.hidden = true;
      controls.note.hidden = true;
      [controls.runAll, controls.reset].forEach(function (b) { b.hidden = false; });
      document.body.classList.add("cr-live-on");
      page.entries = page.cells.map(function (cell, index) { return setUpCell(page, cell, index); }).filter(Boolean);
      say(page, "Loading Python\u2026");
      startWorker(page);
      controls.runAll.focus();
    });
    controls.runAll.addEventListener("click", function () {
      say(page, "Running all cells\u2026");
      runCells(page, page.entries);
    });
    controls.stop.addEventListener("click", function () {
      page.entries.forEach(function (entry) {
        if (entry.cell.getAttribute("data-live-state") === "running") {
          entry.output.textContent = "Stopped.";
          entry.cell.setAttribute("data-live-state", "stopped");
        }
      });
      restart(page, "Stopped. Python has restarted, so the cells above must run again.");
    });
    controls.reset.addEventListener("click", function () {
      page.entries.forEach(function (entry) {
        entry.editor.value = entry.original;
        entry.output.textContent = "";
        entry.cell.removeAttribute("data-live-state");
      });
      restart(page, "Reset: the page's code is back, and Python has restarted.");
    });
  }
})();
