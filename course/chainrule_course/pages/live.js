/* chainrule live code: run a page's code cells in the browser, with Python in WebAssembly.
 *
 * "Live code" starts a Web Worker (live_worker.js) that loads Pyodide, Graphviz in WebAssembly
 * and the engine's and the course's wheels from the book's own _static/live/ folder (no CDN, no
 * server). Each code cell (myst-nb's div.cell) becomes an editor (CodeMirror, live_editor.js; a
 * plain text box if it cannot load) with "Run cell"; its output goes in [data-live-output] under it; the cells share
 * one interpreter, as in a notebook. The toolbar under the title stays
 * in view: Run all cells (stops at an error), Run cells above (the cell last edited or clicked),
 * Stop (restarts Python), Reset (the page's code and empty answers back), and a status that says
 * which cell runs and for how long. Under each checked exercise (data-exercises: label, names,
 * answer and check cells, from _ext/live_code.py) goes the answer cell with Check, which runs the
 * answer, then the notebook's check, and shows the verdict (live_answers.js, loaded first). A solution's cells run only from their
 * own Run cell, never from Run all, and apart from the page's names (space "solution"), so they
 * never replace an answer. Edits and answers are kept in
 * localStorage per page until Reset; a cell edited after it ran marks the outputs below as out of
 * date. Cells tagged no-live (numpy, PyTorch, JAX) say what they need, with the Colab link.
 * With data-live-mode="answers" (a chapter whose code needs numpy, but some of whose exercises do not)
 * the button is "Answer in the page", and only those exercises' answer cells come alive.
 */
(function () {
  "use strict";
  var me = document.currentScript;
  var base = new URL(".", me.src).href;
  var wheels = me.getAttribute("data-wheels");
  var exercises = JSON.parse(me.getAttribute("data-exercises") || "[]");
  var SIZE = me.getAttribute("data-runtime-size") || "about 15 MB";
  var STORE = "chainrule-live:" + location.pathname;
  var ANSWERS_ONLY = me.getAttribute("data-live-mode") === "answers";
  var answers = null;  // the exercises' answer cells (live_answers.js)
  var START = ANSWERS_ONLY ? "Answer in the page" : "Live code";
  // The page loads this script in its head: wait for the page's cells.
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { setUpPage(base, wheels, exercises); });
  } else {
    setUpPage(base, wheels, exercises);
  }
  return;

  // What live_answers.js needs of this page's helpers; it gives back the exercises' functions.
  function answersFor() {
    return window.chainruleLiveAnswers({
      makeEditor: makeEditor, makeButton: makeButton, makeOutput: makeOutput, addText: addText,
      enqueue: enqueue, execute: execute, startClock: startClock, stopPython: stopPython, say: say,
      noteFirstOutput: noteFirstOutput, save: save, startLive: startLive, START: START,
      checkLimit: function () { return Number(me.getAttribute("data-check-limit")); }
    });
  }

  function setUpPage(base, wheels, exercises) {
    answers = answersFor();
    var article = document.querySelector("article.bd-article") || document.querySelector("main") || document.body;
    var cells = ANSWERS_ONLY ? [] : Array.prototype.slice.call(article.querySelectorAll("div.cell"))
      .filter(function (cell) { return cell.querySelector(".cell_input pre"); });
    if (!(cells.length || exercises.length) || !wheels) return;
    // The page's state: its controls, the interpreter, the cells that run.
    var page = {
      base: base, wheels: wheels, cells: cells, entries: [], answers: [], controls: buildPanel(article),
      exercises: exercises.filter(function (e) { return answers.numberExercise(e); }),
      ready: null, running: null, pressedAt: 0, firstOutput: null,
      current: null, clock: null, saved: loadSaved(), generation: 0,
      colab: document.querySelector('a[href*="colab.research.google.com"]')
    };
    page.exercises.forEach(function (exercise) { answers.addHint(exercise); });
    answers.addSkipLinks(page);
    wirePanel(page);
    window.chainrulePython.onRestart(function (why, detail, ready) { onRestart(page, why, detail, ready); });
  }

  // ``short``: the label a phone's toolbar shows (live.css), a part of the name a screen reader hears.
  function makeButton(text, action, label, short) {
    var element = document.createElement("button");
    element.type = "button";
    element.textContent = text;
    element.setAttribute("data-live-action", action);
    if (label || short) element.setAttribute("aria-label", label || text);
    if (short) element.setAttribute("data-short", short);
    return element;
  }

  // The panel under the title: Live code, then the toolbar's buttons and the status line.
  function buildPanel(article) {
    var panel = document.createElement("div");
    panel.className = "cr-live";
    panel.setAttribute("role", "region");
    panel.setAttribute("aria-label", START);
    var controls = {
      panel: panel,
      live: makeButton(START, "live"), runAll: makeButton("Run all cells", "run-all", "", "Run all"),
      above: makeButton("Run cells above", "run-above", "", "Run above"),
      stop: makeButton("Stop", "stop"), reset: makeButton("Reset page", "reset", "", "Reset"),
      undo: makeButton("Undo reset", "undo-reset", "", "Undo"),
      note: document.createElement("span"), status: document.createElement("p"),
      clock: document.createElement("span")
    };
    controls.above.title = "Run every cell above the one you last edited or clicked in";
    controls.reset.title = "Bring back the page's code and empty answer cells, and restart Python (asks first)";
    controls.undo.title = "Bring back the edits and answers the last Reset page cleared";
    controls.note.className = "cr-live-note";
    controls.note.textContent = (ANSWERS_ONLY ? "Check your answers to this chapter's exercises with Python " +
      "in your browser" : "Run and edit this page's Python in your browser") + " (it downloads " + SIZE +
      " once, and keeps it for every chapter).";
    controls.status.className = "cr-live-status";
    controls.status.setAttribute("aria-live", "polite");
    controls.status.setAttribute("data-live-status", "");
    // The seconds a cell has run tick here, outside the live region: a screen reader hears
    // "Running cell 5" once, not every second.
    controls.clock.className = "cr-live-clock";
    controls.clock.setAttribute("data-live-clock", "");
    [controls.runAll, controls.above, controls.stop, controls.reset, controls.undo].forEach(function (b) { b.hidden = true; });
    [controls.live, controls.runAll, controls.above, controls.stop, controls.reset, controls.undo, controls.note,
     controls.status, controls.clock]
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

  // --- what the reader typed, kept per page ------------------------------------------------
  function loadSaved() {
    try {
      var saved = JSON.parse(window.localStorage.getItem(STORE) || "{}");
      return { cells: saved.cells || {}, answers: saved.answers || {} };
    } catch (error) {
      return { cells: {}, answers: {} };
    }
  }

  function save(page) {
    try {
      window.localStorage.setItem(STORE, JSON.stringify(page.saved));
    } catch (error) { /* storage full or refused: the edits last until the page closes */ }
  }

  function forget(page) {
    page.saved = { cells: {}, answers: {} };
    try { window.localStorage.removeItem(STORE); } catch (error) { /* nothing was kept */ }
  }

  // --- the interpreter: the page's one Python (python.js), shared with the drills ---------------
  function startWorker(page) {
    page.ready = window.chainrulePython.start(page.base, page.wheels);
    page.ready.then(function (ms) {
      if (!page.running) say(page, "Python is ready (" + (ms / 1000).toFixed(1) + " s). Run a cell, or Run all cells.");
    }, function (error) {
      say(page, "Python could not start: " + error.message);
    });
  }

  // Python restarted, here or for a drill: crashed, or stopped or reset by this page's buttons.
  function onRestart(page, why, detail, ready) {
    page.ready = ready;
    if (why !== "crashed") return;
    page.generation += 1;
    page.running = null;
    stopClock(page);
    say(page, "Python crashed (" + detail + ") and has restarted; the cells above must run again (Run cells above).");
  }

  function execute(page, code, space) {
    return page.ready.then(function () { return window.chainrulePython.run(code, space); });
  }

  // Stop and Reset restart Python: a run begun before (an older generation) says nothing more.
  // ``sameGeneration``: Stop already ended the runs begun before it, and a Run pressed while it
  // waited for Python runs once Python is back.
  function restart(page, message, sameGeneration) {
    if (!sameGeneration) page.generation += 1;
    if (!sameGeneration) page.running = null;  // else the run pressed meanwhile is what runs now
    stopClock(page);
    window.chainrulePython.restart("stopped");
    say(page, message);
  }

  // Stops the code Python runs now. An isolated page interrupts it (a KeyboardInterrupt in the
  // cell) and keeps every name; otherwise, or when Python has not answered 10 s later (it was
  // inside a long call, or a busy device was slow to answer: 5 s were once too few on a
  // loaded 2-core machine), Python restarts and ``onLost`` runs. A run begun before says nothing.
  function stopPython(page, kept, lost, onLost) {
    var python = window.chainrulePython;
    var inFlight = python.inFlight();
    if (!inFlight.length || !python.interrupt()) {
      restart(page, lost);
      if (onLost) onLost();
      return;
    }
    page.generation += 1;
    say(page, kept);
    var wait = Number(me.getAttribute("data-stop-wait") || 10);
    window.setTimeout(function () {
      if (!inFlight.some(python.isRunning)) return;
      restart(page, lost, true);
      if (onLost) onLost();
    }, wait * 1000);
  }

  // The status while a cell runs: which one, and for how long; Stop shows meanwhile.
  function startClock(page, what) {
    stopClock(page);
    var began = performance.now();
    say(page, "Running " + what + "\u2026");
    var tick = function () {
      var seconds = Math.floor((performance.now() - began) / 1000);
      page.controls.clock.textContent = seconds ? what + ": " + seconds + " s" : "";
    };
    page.clock = window.setInterval(tick, 1000);
    page.controls.stop.hidden = false;
  }

  function stopClock(page) {
    if (page.clock) window.clearInterval(page.clock);
    page.clock = null;
    page.controls.clock.textContent = "";
    page.controls.stop.hidden = true;
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

  function makeOutput() {
    var output = document.createElement("div");
    output.className = "cr-live-output";
    output.setAttribute("data-live-output", "");  // not a live region: the status says what ran
    return output;
  }

  // The editor of a cell: CodeMirror (live_editor.js) once loaded, a plain text box if it
  // could not load. Either way {element, value, focus(), onFocus()}; setting value calls onEdit.
  function makeEditor(page, code, label, onRun, onEdit) {
    if (page.codeEditor) return page.codeEditor.makeCodeEditor(code, label, onRun, onEdit);
    var area = document.createElement("textarea");
    area.className = "cr-live-editor";
    area.value = code;
    area.spellcheck = false;
    area.setAttribute("aria-label", label);
    var fit = function () { area.rows = Math.min(30, area.value.split("\n").length + 1); };
    fit();
    area.addEventListener("keydown", function (event) {
      if (event.key === "Enter" && (event.shiftKey || event.ctrlKey)) {
        event.preventDefault();
        onRun();
      }
    });
    area.addEventListener("input", function () { fit(); onEdit(area.value); });
    return {
      element: area,
      get value() { return area.value; },
      set value(text) { area.value = text; fit(); onEdit(text); },
      focus: function () { area.focus(); },
      onFocus: function (callback) { area.addEventListener("focus", callback); }
    };
  }

  // CodeMirror's modules (copied from npm's packages into cm/ by _ext/live_code.py) by their
  // bare names, through an import map; then live_editor.js. Resolves to the module, or null.
  function loadEditor(base) {
    return fetch(base + "cm/modules.json").then(function (response) {
      if (!response.ok) throw new Error("no cm/modules.json");
      return response.json();
    }).then(function (modules) {
      var imports = {};
      Object.keys(modules).forEach(function (name) { imports[name] = new URL(modules[name], base).href; });
      var map = document.createElement("script");
      map.type = "importmap";
      map.textContent = JSON.stringify({ imports: imports });
      document.head.appendChild(map);
      return import(base + "live_editor.js");
    }).catch(function () { return null; });
  }

  function setUpCell(page, cell, index) {
    var input = cell.querySelector(".cell_input");
    var original = cell.querySelector(".cell_input pre").textContent.replace(/\n$/, "");
    var output = makeOutput();
    if (cell.classList.contains("tag_no-live")) return skipCell(page, cell, input, original, output);
    var kept = page.saved.cells[index];
    var entry = {
      cell: cell, output: output, original: original, index: index,
      space: cell.classList.contains("tag_solution") ? "solution" : "page", ran: false
    };
    var code = kept && kept.original === original ? kept.code : original;
    entry.editor = makeEditor(page, code, "Code of cell " + (index + 1), function () { runCells(page, [entry]); },
                              function (value) { cellEdited(page, entry, value); });
    entry.editor.onFocus(function () { page.current = entry; });
    var runButton = makeButton("Run cell", "run-cell", "Run cell " + (index + 1));
    runButton.title = "Run this cell (Shift+Enter in the cell)";
    var box = document.createElement("div");
    box.className = "cr-live-cell";
    var number = document.createElement("span");
    number.className = "cr-live-number";
    number.textContent = "Cell " + (index + 1);
    number.setAttribute("aria-hidden", "true");  // the editor and its button carry the number in their names
    box.appendChild(number);
    box.appendChild(entry.editor.element);
    box.appendChild(runButton);
    input.parentNode.insertBefore(box, input.nextSibling);
    box.parentNode.insertBefore(output, box.nextSibling);
    runButton.addEventListener("click", function () { page.current = entry; runCells(page, [entry]); });
    return entry;
  }

  // An edit is kept; once a cell has run, editing it makes the outputs below it out of date.
  function cellEdited(page, entry, value) {
    page.current = entry;
    if (value === entry.original) delete page.saved.cells[entry.index];
    else page.saved.cells[entry.index] = { original: entry.original, code: value };
    save(page);
    if (!entry.ran) return;
    page.entries.forEach(function (other) {
      if (other.index > entry.index && other.ran) other.output.setAttribute("data-live-stale", "");
    });
  }

  function showResult(page, entry, result) {
    var output = entry.output;
    output.textContent = "";
    output.removeAttribute("data-live-stale");
    var stream = (result.stdout || "") + (result.stderr || "");
    if (stream) addLong(output, "cr-live-stream", stream.replace(/\n$/, ""));
    if (result.error) addText(output, "pre", "cr-live-error", result.error);
    if (result.text) addLong(output, "cr-live-result", result.text);
    if (result.html) {
      var shown = addText(output, "div", "cr-live-html", "");
      shown.innerHTML = result.html;
      if (window.chainruleExplorable) window.chainruleExplorable.setupAll(shown);
      if (window.chainruleWatchScrolling) window.chainruleWatchScrolling(shown);  // site.js
    }
    entry.ran = true;
    entry.cell.setAttribute("data-live-state", result.error ? "error" : "done");
    noteFirstOutput(page);
  }

  // A long output shows its first MAX_LINES lines, in a box that scrolls past about 40 lines,
  // and a button that shows the rest: a 200,000-line print must not make a page miles long.
  function addLong(parent, className, text) {
    var MAX_LINES = 500;  // here, not beside the function: the code after the IIFE's return never runs
    var lines = text.split("\n");
    var pre = addText(parent, "pre", className, lines.slice(0, MAX_LINES).join("\n"));
    if (lines.length > MAX_LINES) {
      var all = makeButton("Show all " + lines.length + " lines", "show-all");
      all.addEventListener("click", function () { pre.textContent = text; all.remove(); });
      parent.appendChild(all);
    }
    window.requestAnimationFrame(function () {  // a box that scrolls is reached by the keyboard too
      if (pre.scrollHeight > pre.clientHeight) pre.tabIndex = 0;
    });
    return pre;
  }

  function addText(parent, tag, className, text) {
    var element = document.createElement(tag);
    element.className = className;
    element.textContent = text;
    parent.appendChild(element);
    return element;
  }

  function noteFirstOutput(page) {
    if (page.firstOutput !== null) return;
    page.firstOutput = (performance.now() - page.pressedAt) / 1000;
    document.documentElement.setAttribute("data-live-first-output", page.firstOutput.toFixed(2));
  }

  // Runs ``work`` after whatever runs now; what it returns (a promise) is the new "running".
  function enqueue(page, work) {
    var chain = page.running || Promise.resolve(true);
    var mine = chain.then(work).then(function (value) {
      if (page.running === mine) { page.running = null; stopClock(page); }
      return value;
    }, function (error) {
      if (page.running === mine) { page.running = null; stopClock(page); }
      say(page, "Python stopped: " + error.message);
      return false;
    });
    page.running = mine;
    return mine;
  }

  // Runs the cells of ``list`` one after another; a list of several stops at an error.
  function runCells(page, list, done) {
    var generation = page.generation;
    return enqueue(page, function () {
      var failed = null;
      return list.reduce(function (previous, entry) {
        return previous.then(function (goOn) {
          if (!goOn || generation !== page.generation) return false;
          entry.cell.setAttribute("data-live-state", "running");
          entry.output.removeAttribute("data-live-stale");  // the cell that runs says only that it runs
          entry.output.textContent = "Running\u2026";
          startClock(page, "cell " + (entry.index + 1));
          return execute(page, entry.editor.value, entry.space).then(function (result) {
            if (generation !== page.generation) return false;
            showResult(page, entry, result);
            var expected = entry.cell.classList.contains("tag_raises-exception");
            var goOn = !result.error || expected || list.length === 1;
            if (!goOn) failed = { entry: entry, error: result.error };
            return goOn;
          });
        });
      }, Promise.resolve(true)).then(function (finished) {
        if (generation !== page.generation) return false;
        if (list.length === 1 && !done) say(page, "Cell " + (list[0].index + 1) + " ran.");
        else if (done && finished) say(page, done);
        else if (done && failed) {
          say(page, "Stopped at cell " + (failed.entry.index + 1) + ", which raised " +
              String(failed.error).split(":")[0] + "; fix it and run again.");
          failed.entry.cell.scrollIntoView({ block: "center" });
          failed.entry.editor.focus();
        } else if (done) say(page, "Stopped.");
        return finished;
      });
    });
  }

  // --- the panel's buttons -------------------------------------------------------------
  function startLive(page) {
    var controls = page.controls;
    page.pressedAt = performance.now();
    startWorker(page);  // first: its worker loads while the page lays itself out again
    controls.live.hidden = true;
    document.body.classList.add("cr-live-on");
    keepUnderHeader(controls.panel);
    say(page, "Loading Python\u2026");
    page.editorsReady = loadEditor(page.base).then(function (module) {
      page.codeEditor = module;
      page.entries = page.cells.map(function (cell, index) { return setUpCell(page, cell, index); })
        .filter(Boolean);
      page.answers = page.exercises.map(function (exercise) { return answers.setUpAnswer(page, exercise); });
      controls.reset.hidden = false;
      controls.runAll.hidden = controls.above.hidden = ANSWERS_ONLY;
      controls.note.textContent = (ANSWERS_ONLY ? "In an answer: Shift+Enter checks it" : "In a cell: Shift+Enter runs it") +
        ", Tab indents, Esc then Tab leaves it.";
      // The keys' note stays under the panel, out of the bar that follows the reader.
      controls.panel.parentNode.insertBefore(controls.note, controls.panel.nextSibling);
      if (ANSWERS_ONLY) answers.goToAnswer(page, page.exercises[0]);  // the answers are all there is to do here
      else controls.runAll.focus();
    });
    return page.editorsReady;
  }

  // The toolbar sticks just under the theme's own sticky header, whatever its height, and the
  // page scrolls an anchor's target or the focused element to below both bars, never under them.
  function keepUnderHeader(panel) {
    var place = function () {
      var header = document.querySelector(".bd-header-article");
      var height = header && getComputedStyle(header).position === "sticky" ? header.offsetHeight : 0;
      panel.style.setProperty("--cr-live-top", height + "px");
      document.documentElement.style.scrollPaddingTop = (height + panel.offsetHeight + 8) + "px";
    };
    place();
    window.addEventListener("resize", place);
    if (window.ResizeObserver) new ResizeObserver(place).observe(panel);
  }

  function stopRunning(page) {
    page.entries.forEach(function (entry) {
      if (entry.cell.getAttribute("data-live-state") === "running") {
        entry.output.textContent = "Stopped.";
        entry.cell.setAttribute("data-live-state", "stopped");
      }
    });
    page.answers.forEach(function (entry) {
      if (entry.output.textContent === "Checking\u2026") entry.output.textContent = "Stopped.";
    });
    stopPython(page, "Stopped. Every name the cells defined is kept.",
               "Stopped. Python has restarted, so the cells above must run again (Run cells above).",
               function () { page.entries.forEach(function (entry) { entry.ran = false; }); });
  }

  // Reset page asks first, and keeps what it cleared until the page closes: Undo reset brings it back.
  function resetPage(page) {
    if (!window.confirm("Bring back the page's code and empty every answer? Undo reset brings your edits back.")) return;
    page.cleared = JSON.parse(JSON.stringify(page.saved));
    forget(page);
    page.entries.forEach(function (entry) {
      entry.editor.value = entry.original;
      entry.output.textContent = "";
      entry.output.removeAttribute("data-live-stale");
      entry.ran = false;
      entry.cell.removeAttribute("data-live-state");
    });
    page.answers.forEach(function (entry) {
      entry.editor.value = entry.exercise.answer;
      entry.output.textContent = "";
    });
    forget(page);
    page.controls.undo.hidden = false;
    restart(page, "Reset: the page's code and empty answers are back, and Python has restarted. " +
            "Undo reset brings your edits back.");
  }

  function undoReset(page) {
    var cleared = page.cleared || { cells: {}, answers: {} };
    page.entries.forEach(function (entry) {
      var kept = cleared.cells[entry.index];
      if (kept && kept.original === entry.original) entry.editor.value = kept.code;
    });
    page.answers.forEach(function (entry) {
      var kept = cleared.answers[entry.exercise.label];
      if (kept) entry.editor.value = kept.code;
    });
    page.cleared = null;
    page.controls.undo.hidden = true;
    say(page, "Your edits and answers are back; run the cells again to see their outputs.");
  }

  function wirePanel(page) {
    var controls = page.controls;
    controls.live.addEventListener("click", function () { startLive(page); });
    // Run all and Run cells above leave the solutions' cells alone: they run from their own button.
    var notSolution = function (entry) { return entry.space !== "solution"; };
    controls.runAll.addEventListener("click", function () {
      runCells(page, page.entries.filter(notSolution),
               "All cells ran; a solution's cells run only from their own Run cell.");
    });
    controls.above.addEventListener("click", function () {
      var current = page.current;
      var above = page.entries.filter(function (entry) {
        return notSolution(entry) && (!current || entry.index < current.index);
      });
      if (!current) { say(page, "Click in a cell first: Run cells above runs the cells above it."); return; }
      if (!above.length) { say(page, "No cell is above cell " + (current.index + 1) + "."); return; }
      runCells(page, above, "The " + above.length + " cells above cell " + (current.index + 1) + " ran.");
    });
    controls.stop.addEventListener("click", function () { stopRunning(page); });
    controls.reset.addEventListener("click", function () { resetPage(page); });
    controls.undo.addEventListener("click", function () { undoReset(page); });
  }
})();
