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

    var worker = null, ready = null, running = null, pending = {}, counter = 0, pressedAt = 0;
    var firstOutput = null;

    var button = function (text, action) {
      var element = document.createElement("button");
      element.type = "button";
      element.textContent = text;
      element.setAttribute("data-live-action", action);
      return element;
    };
    var panel = document.createElement("div");
    panel.className = "cr-live";
    panel.setAttribute("role", "region");
    panel.setAttribute("aria-label", "Live code");
    var liveButton = button("Live code", "live");
    var runAllButton = button("Run all cells", "run-all");
    var stopButton = button("Stop", "stop");
    var resetButton = button("Reset", "reset");
    var note = document.createElement("span");
    note.className = "cr-live-note";
    note.textContent = "Run and edit this page's Python in your browser (it downloads about 13 MB, once).";
    var status = document.createElement("p");
    status.className = "cr-live-status";
    status.setAttribute("aria-live", "polite");
    status.setAttribute("data-live-status", "");
    [runAllButton, stopButton, resetButton].forEach(function (b) { b.hidden = true; });
    [liveButton, runAllButton, stopButton, resetButton, note, status].forEach(function (e) { panel.appendChild(e); });
    var heading = article.querySelector("h1");
    if (heading && heading.parentNode) heading.parentNode.insertBefore(panel, heading.nextSibling);
    else article.insertBefore(panel, article.firstChild);

    var say = function (text) { status.textContent = text; };
    var colab = document.querySelector('a[href*="colab.research.google.com"]');
    var needs = function (code) {
      if (/\bjax\b/.test(code)) return "JAX";
      if (/\btorch\b/.test(code)) return "PyTorch";
      return "numpy and matplotlib";
    };

    // --- the interpreter -------------------------------------------------------------
    var startWorker = function () {
      worker = new Worker(base + "live_worker.js");
      ready = new Promise(function (resolve, reject) {
        worker.onmessage = function (event) {
          var message = event.data;
          if (message.type === "ready") resolve(message.ms);
          else if (message.type === "failed") reject(new Error(message.message));
          else if (message.type === "result" && pending[message.id]) {
            pending[message.id](message.result);
            delete pending[message.id];
          } else if (message.type === "crashed") {
            var waiting = pending[message.id];
            delete pending[message.id];
            restart("Python crashed (" + message.message + ") and has restarted; " +
                    "the cells above must run again.");
            if (waiting) waiting({ error: "Python crashed while running this cell: " + message.message });
          }
        };
        worker.onerror = function (event) { reject(new Error(event.message || "the worker failed")); };
      });
      worker.postMessage({ type: "start", base: base, wheel: wheel });
      ready.then(function (ms) {
        say("Python is ready (" + (ms / 1000).toFixed(1) + " s). Run a cell, or Run all cells.");
      }, function (error) {
        say("Python could not start: " + error.message);
      });
    };
    var execute = function (code) {
      return ready.then(function () {
        return new Promise(function (resolve) {
          counter += 1;
          pending[counter] = resolve;
          worker.postMessage({ type: "run", id: counter, code: code });
        });
      });
    };

    // --- the cells ---------------------------------------------------------------------
    var setUp = function (cell, index) {
      var input = cell.querySelector(".cell_input");
      var original = cell.querySelector(".cell_input pre").textContent.replace(/\n$/, "");
      var output = document.createElement("div");
      output.className = "cr-live-output";
      output.setAttribute("data-live-output", "");
      output.setAttribute("aria-live", "polite");
      if (cell.classList.contains("tag_no-live")) {
        var line = document.createElement("p");
        line.className = "cr-live-skip";
        line.appendChild(document.createTextNode("This cell needs " + needs(original) + "; run it in Colab"));
        if (colab) {
          var link = document.createElement("a");
          link.href = colab.href;
          link.textContent = " (open this chapter in Colab)";
          line.appendChild(link);
        }
        line.appendChild(document.createTextNode("."));
        output.appendChild(line);
        input.parentNode.insertBefore(output, input.nextSibling);
        cell.setAttribute("data-live-state", "skipped");
        return null;
      }
      var editor = document.createElement("textarea");
      editor.className = "cr-live-editor";
      editor.value = original;
      editor.rows = Math.min(30, original.split("\n").length + 1);
      editor.spellcheck = false;
      editor.setAttribute("aria-label", "Code of cell " + (index + 1));
      var runButton = button("Run cell", "run-cell");
      runButton.setAttribute("aria-label", "Run cell " + (index + 1));
      var box = document.createElement("div");
      box.className = "cr-live-cell";
      box.appendChild(editor);
      box.appendChild(runButton);
      input.parentNode.insertBefore(box, input.nextSibling);
      box.parentNode.insertBefore(output, box.nextSibling);
      var entry = { cell: cell, editor: editor, output: output, original: original, index: index };
      runButton.addEventListener("click", function () { runCells([entry]); });
      editor.addEventListener("keydown", function (event) {
        if (event.key === "Enter" && (event.shiftKey || event.ctrlKey)) {
          event.preventDefault();
          runCells([entry]);
        }
      });
      return entry;
    };

    var show = function (entry, result) {
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
      if (firstOutput === null) {
        firstOutput = (performance.now() - pressedAt) / 1000;
        document.documentElement.setAttribute("data-live-first-output", firstOutput.toFixed(2));
      }
    };

    var entries = [];
    var runCells = function (list) {
      var chain = running || Promise.resolve(true);
      running = chain.then(function () {
        return list.reduce(function (previous, entry) {
          return previous.then(function (goOn) {
            if (!goOn) return false;
            entry.cell.setAttribute("data-live-state", "running");
            entry.output.textContent = "Running\u2026";
            stopButton.hidden = false;
            return execute(entry.editor.value).then(function (result) {
              show(entry, result);
              var expected = entry.cell.classList.contains("tag_raises-exception");
              return !result.error || expected || list.length === 1;
            });
          });
        }, Promise.resolve(true));
      }).then(function (finished) {
        stopButton.hidden = true;
        running = null;
        if (list.length > 1) say(finished ? "All cells ran." : "Stopped at a cell that raised an error; fix it and run again.");
        return finished;
      }, function (error) {
        running = null;
        say("Python stopped: " + error.message);
      });
      return running;
    };

    var restart = function (message) {
      if (worker) worker.terminate();
      Object.keys(pending).forEach(function (id) { pending[id]({ error: "Stopped." }); });
      pending = {};
      running = null;
      stopButton.hidden = true;
      startWorker();
      say(message);
    };

    liveButton.addEventListener("click", function () {
      pressedAt = performance.now();
      liveButton.hidden = true;
      note.hidden = true;
      [runAllButton, resetButton].forEach(function (b) { b.hidden = false; });
      document.body.classList.add("cr-live-on");
      entries = cells.map(setUp).filter(Boolean);
      say("Loading Python\u2026");
      startWorker();
      runAllButton.focus();
    });
    runAllButton.addEventListener("click", function () {
      say("Running all cells\u2026");
      runCells(entries);
    });
    stopButton.addEventListener("click", function () {
      entries.forEach(function (entry) {
        if (entry.cell.getAttribute("data-live-state") === "running") {
          entry.output.textContent = "Stopped.";
          entry.cell.setAttribute("data-live-state", "stopped");
        }
      });
      restart("Stopped. Python has restarted, so the cells above must run again.");
    });
    resetButton.addEventListener("click", function () {
      entries.forEach(function (entry) {
        entry.editor.value = entry.original;
        entry.output.textContent = "";
        entry.cell.removeAttribute("data-live-state");
      });
      restart("Reset: the page's code is back, and Python has restarted.");
    });
  }
})();
