/* chainrule live code: run a page's code cells in the browser, with Python in WebAssembly.
 *
 * "Live code" starts a Web Worker (python.js, live_worker.js) with Pyodide, Graphviz in WebAssembly and the
 * engine's and the course's wheels, from the book's own _static/live/ folder (no CDN, no server). Each code
 * cell (div.cell) becomes an editor (CodeMirror, live_editor.js; a text box if it cannot load) with "Run cell"
 * and its output, [data-live-output] (live_cells.js: made as needed, so that the first output waits for none
 * but the first); the cells share one interpreter. The toolbar stays in view: Run all cells (stops at an
 * error), Run cells above (the cell last edited or clicked), Stop (interrupts or restarts Python; a stopped
 * cell keeps what it printed), Reset (asks; Undo reset), and a status that says which cell runs and how long.
 * Under each checked exercise (data-exercises, from _ext/live_code.py) goes its answer cell with Check
 * (live_answers.js). A solution's cells run only from their own Run cell, apart from the page's names (space
 * "solution"). Edits and answers are kept in localStorage per page; a cell edited after it ran marks the
 * outputs below out of date. Cells tagged no-live say what they need, with the Colab link. data-live-mode=
 * "answers": the button is "Answer in the page", and only the exercises' answer cells come alive.
 * Keys: Shift+Enter (Ctrl+Enter) runs a cell, checks an answer. Ctrl+. (Cmd+. on a Mac) stops what runs, as
 * Stop does, from anywhere, an editor too (nothing when nothing runs): said in the note under the toolbar,
 * every editor's aria-describedby, and on Stop. Alt+Shift+L (Option+Shift+L) goes to the panel's controls from
 * anywhere (Stop while code runs), as does "Skip to Live code", the second Tab stop of the page. The focus is never dropped: "Live code" keeps it (aria-disabled)
 * until Run all cells (or the answer) takes it; Stop, pressed or hidden as the run ends, gives it to the Run
 * cell (or Check) button of what ran; Undo reset gives it to Reset page.
 *
 * An ES module, the one the build loads on a live page (with data-* attributes on its tag): it imports
 * live_cells.js, live_answers.js, python.js and site.js. */
import * as python from "./python.js";
import { liveAnswers } from "./live_answers.js";
import { liveCells } from "./live_cells.js";
import { ownScript, whenParsed } from "./site.js";

var me = ownScript(import.meta.url);
var base = new URL(".", import.meta.url).href;
var wheels = me.getAttribute("data-wheels");
var exercises = JSON.parse(me.getAttribute("data-exercises") || "[]");
var SIZE = me.getAttribute("data-runtime-size") || "about 15 MB";
var STORE = "chainrule-live:" + location.pathname;
var ANSWERS_ONLY = me.getAttribute("data-live-mode") === "answers";
var MAC = /Mac|iPhone|iPad/.test(navigator.platform || "");
var STOP_KEY = MAC ? "Cmd+." : "Ctrl+.";
var JUMP_KEY = MAC ? "Option+Shift+L" : "Alt+Shift+L";  // to the panel's controls, from anywhere
var answers = null;  // the exercises' answer cells (live_answers.js)
var cells = null;  // the code cells' editors and outputs (live_cells.js)
var START = ANSWERS_ONLY ? "Answer in the page" : "Live code";
// The page's cells, once it is parsed.
whenParsed(function () { setUpPage(base, wheels, exercises); });

// What live_cells.js and live_answers.js need of this page's helpers; they give back their functions.
function helpersFor() {
  cells = liveCells({
    makeButton: makeButton, save: save, runCells: runCells, noteFirstOutput: noteFirstOutput
  });
  answers = liveAnswers({
    makeEditor: cells.makeEditor, makeButton: makeButton, makeOutput: cells.makeOutput, addText: cells.addText,
    enqueue: enqueue, execute: execute, startClock: startClock, stopPython: stopPython, say: say,
    noteFirstOutput: noteFirstOutput, save: save, startLive: startLive, START: START,
    checkLimit: function () { return Number(me.getAttribute("data-check-limit")); }
  });
}

function setUpPage(base, wheels, exercises) {
  helpersFor();
  var article = document.querySelector("article.bd-article") || document.querySelector("main") || document.body;
  var found = ANSWERS_ONLY ? [] : Array.prototype.slice.call(article.querySelectorAll("div.cell"))
    .filter(function (cell) { return cell.querySelector(".cell_input pre"); });
  if (!(found.length || exercises.length) || !wheels) return;
  // The page's state: its controls, the interpreter, the cells that run.
  var page = {
    base: base, wheels: wheels, cells: found, entries: [], answers: [], controls: buildPanel(article),
    exercises: exercises.filter(function (e) { return answers.numberExercise(e); }),
    ready: null, running: null, pressedAt: 0, firstOutput: null, lastRun: null,
    current: null, clock: null, saved: loadSaved(), generation: 0,
    colab: document.querySelector('a[href*="colab.research.google.com"]')
  };
  page.exercises.forEach(function (exercise) { answers.addHint(exercise); });
  page.skips = addSkipLink(page);
  answers.addSkipLinks(page);
  wirePanel(page);
  python.onRestart(function (why, detail, ready) { onRestart(page, why, detail, ready); });
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
  panel.id = "cr-live";  // the skip link's target
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
  controls.stop.title = "Stop the code that runs (" + STOP_KEY + ", from anywhere in the page)";
  controls.stop.setAttribute("aria-keyshortcuts", MAC ? "Meta+." : "Control+.");
  controls.reset.title = "Bring back the page's code and empty answer cells, and restart Python (asks first)";
  controls.undo.title = "Bring back the edits and answers the last Reset page cleared";
  controls.note.className = "cr-live-note";
  controls.note.id = "cr-live-keys";  // once Live code is on, every editor's description
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

// --- reaching the controls from the keyboard -----------------------------------------------
// Right after the theme's "Skip to main content", on its bar (shown when a link in it has the
// focus): "Skip to Live code", the second key press from the top (the page's own order has the
// whole chapter list before the panel). The exercises' links follow it (live_answers.js). The
// element that holds them, or null without the theme's bar.
function addSkipLink(page) {
  var first = document.getElementById("pst-skip-link");
  if (!first) return null;
  var nav = document.createElement("nav");
  nav.className = "skip-link d-print-none cr-live-skips";
  nav.setAttribute("aria-label", "Skip to " + START + (page.exercises.length ? " or an exercise's answer" : ""));
  var link = document.createElement("a");
  link.href = "#cr-live";
  link.textContent = "Skip to " + (ANSWERS_ONLY ? "\u201c" + START + "\u201d" : START) + " (" + JUMP_KEY + " from anywhere)";
  link.setAttribute("aria-keyshortcuts", "Alt+Shift+L");
  link.addEventListener("click", function (event) {
    event.preventDefault();
    goToControls(page);
  });
  nav.appendChild(link);
  first.parentNode.insertBefore(nav, first.nextSibling);
  return nav;
}

// The focus to the panel's control a keyboard user wants there: Stop while code runs (or waits
// to), else Live code until it is on, else Run all cells (Reset page where the cells do not run).
function goToControls(page) {
  var controls = page.controls;
  var target = [controls.stop, controls.live, controls.runAll, controls.reset]
    .filter(function (button) { return !button.hidden; })[0];
  target.focus();  // scrolled into view, below the sticky bars (keepUnderHeader)
}

// --- what the reader typed, kept per page ------------------------------------------------
function loadSaved() {
  try {
    var saved = JSON.parse(window.localStorage.getItem(STORE) || "{}");
    return { cells: saved.cells || {}, answers: saved.answers || {} };
  } catch {
    return { cells: {}, answers: {} };
  }
}

function save(page) {
  try {
    window.localStorage.setItem(STORE, JSON.stringify(page.saved));
  } catch { /* storage full or refused: the edits last until the page closes */ }
}

function forget(page) {
  page.saved = { cells: {}, answers: {} };
  try { window.localStorage.removeItem(STORE); } catch { /* nothing was kept */ }
}

// --- the interpreter: the page's one Python (python.js), shared with the drills ---------------
function startWorker(page) {
  page.ready = python.start(page.base, page.wheels);
  page.ready.then(function (ms) {
    if (page.running) return;
    say(page, "Python is ready (" + (ms / 1000).toFixed(1) + " s). Run a cell, or Run all cells.");
    makeTheRestSoon(page);  // nothing to run yet: the other editors now
  }, function (error) {
    say(page, "Python could not start: " + error.message);
    makeTheRestSoon(page);
  });
}

// The editors not made yet, in idle moments: once the first output is shown, or nothing waits for Python.
function makeTheRestSoon(page) {
  if (page.editorsReady) page.editorsReady.then(function () { cells.makeTheRest(page); });
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

// ``onOutput(text)``: what the code has printed so far, while it runs.
function execute(page, code, space, onOutput) {
  return page.ready.then(function () { return python.run(code, space, onOutput); });
}

// Stop and Reset restart Python: a run begun before (an older generation) says nothing more.
// ``sameGeneration``: Stop already ended the runs begun before it, and a Run pressed while it
// waited for Python runs once Python is back.
function restart(page, message, sameGeneration) {
  if (!sameGeneration) page.generation += 1;
  if (!sameGeneration) page.running = null;  // else the run pressed meanwhile is what runs now
  stopClock(page);
  python.restart("stopped");
  say(page, message);
}

// Stops the code Python runs now. An isolated page interrupts it (a KeyboardInterrupt in the
// cell) and keeps every name; otherwise, or when Python has not answered 10 s later (it was
// inside a long call, or a busy device was slow to answer: 5 s were once too few on a
// loaded 2-core machine), Python restarts and ``onLost`` runs. A run begun before says nothing.
function stopPython(page, kept, lost, onLost) {
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
  if (page.clock) window.clearInterval(page.clock);  // Stop stays (and keeps the focus) from cell to cell
  page.controls.clock.textContent = "";
  var began = performance.now();
  say(page, "Running " + what + "\u2026");
  var tick = function () {
    var seconds = Math.floor((performance.now() - began) / 1000);
    page.controls.clock.textContent = seconds ? what + ": " + seconds + " s" : "";
  };
  page.clock = window.setInterval(tick, 1000);
  page.controls.stop.hidden = false;
}

// Stop hides when nothing runs; if it had the focus, the button of what ran gets it.
function stopClock(page) {
  var controls = page.controls;
  var focused = document.activeElement === controls.stop;
  if (page.clock) window.clearInterval(page.clock);
  page.clock = null;
  controls.clock.textContent = "";
  controls.stop.hidden = true;
  if (focused) focusAfterStop(page);
}

function focusAfterStop(page) {
  var controls = page.controls;
  var choices = [page.lastRun, controls.runAll, controls.reset];
  var target = choices.filter(function (b) { return b && b.isConnected && !b.hidden && b.offsetParent; })[0];
  if (target) target.focus();
}

function noteFirstOutput(page) {
  if (page.firstOutput !== null) return;
  page.firstOutput = (performance.now() - page.pressedAt) / 1000;
  document.documentElement.setAttribute("data-live-first-output", page.firstOutput.toFixed(2));
  makeTheRestSoon(page);
}

// Runs ``work`` after whatever runs now; what it returns (a promise) is the new "running".
function enqueue(page, work) {
  var chain = page.running || Promise.resolve(true);
  var settled = function () {
    if (page.running !== mine) return;
    page.running = null;
    stopClock(page);
    makeTheRestSoon(page);
  };
  var mine = chain.then(work).then(function (value) {
    settled();
    return value;
  }, function (error) {
    settled();
    say(page, "Python stopped: " + error.message);
    return false;
  });
  page.running = mine;
  return mine;
}

// Runs one cell of a list: false ends the list.
function runOne(page, entry, generation, single) {
  cells.showRunning(entry);
  page.lastRun = entry.runButton;
  startClock(page, "cell " + (entry.index + 1));
  var printed = function (text) { if (generation === page.generation) cells.showPrinted(entry, text); };
  return execute(page, entry.editor.value, entry.space, printed).then(function (result) {
    if (generation !== page.generation) {
      cells.showEnded(page, entry, result);
      return false;
    }
    cells.showResult(page, entry, result);
    var expected = entry.cell.classList.contains("tag_raises-exception");
    return !result.error || expected || single ? true : { entry: entry, error: result.error };
  });
}

// Runs the cells of ``list`` one after another; a list of several stops at an error.
function runCells(page, list, done) {
  var generation = page.generation;
  return enqueue(page, function () {
    var failed = null;
    return list.reduce(function (previous, entry) {
      return previous.then(function (goOn) {
        if (!goOn || generation !== page.generation) return false;
        return runOne(page, entry, generation, list.length === 1).then(function (outcome) {
          if (outcome && outcome.entry) failed = outcome;
          return outcome === true;
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
  if (page.editorsReady) return page.editorsReady;
  var controls = page.controls;
  page.pressedAt = performance.now();
  startWorker(page);  // first: its worker loads while the page lays itself out again
  controls.live.setAttribute("aria-disabled", "true");  // it keeps the focus until the toolbar is there
  document.body.classList.add("cr-live-on");
  keepUnderHeader(controls.panel);
  say(page, "Loading Python\u2026");
  page.editorsReady = cells.loadEditor(page.base).then(function (makeCodeEditor) {
    page.codeEditor = makeCodeEditor;  // CodeMirror's editor, or null: a plain text area
    page.keysNote = controls.note.id;
    // The first editors are made before anything changes in the page (live_cells.js: makeAll).
    cells.setUpCells(page);
    page.answers = page.exercises.map(function (exercise) { return answers.setUpAnswer(page, exercise); });
    showToolbar(page);
  });
  return page.editorsReady;
}

// The editors made, into the page; the keys' note, and the toolbar in place of "Live code".
function showToolbar(page) {
  var controls = page.controls;
  controls.note.textContent = (ANSWERS_ONLY ? "In an answer: Shift+Enter checks it" : "In a cell: Shift+Enter runs it") +
    ", Tab indents, Esc then Tab leaves it; " + STOP_KEY + " stops the code that runs; " + JUMP_KEY +
    " goes to these buttons.";
  // The keys' note stays under the panel, out of the bar that follows the reader.
  controls.panel.parentNode.insertBefore(controls.note, controls.panel.nextSibling);
  cells.placeMade(page);
  page.answers.forEach(function (entry) { entry.place(); });
  controls.reset.hidden = false;
  controls.runAll.hidden = controls.above.hidden = ANSWERS_ONLY;
  var focused = document.activeElement;
  if (ANSWERS_ONLY) answers.focusAnswer(page, page.exercises[0]);  // the answers are all there is to do here
  else if (focused === controls.live || focused === document.body || !focused) {
    controls.runAll.focus({ preventScroll: true });  // in the bar, in view
  }
  controls.live.hidden = true;  // only now: the focus was never on the page's body
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
  // The first place() after the next layout (ResizeObserver's first call): read now, the sizes
  // would lay out the whole page at once (0.1 s on a long chapter).
  window.addEventListener("resize", place);
  if (window.ResizeObserver) new ResizeObserver(place).observe(panel);
  else window.requestAnimationFrame(place);
}

// A cell stopped keeps what it printed and says after how long (live_cells.js).
function stopRunning(page) {
  var first = true;  // whether the cell stopped is the first: then no cell above has anything to run again
  page.entries.forEach(function (entry) {
    if (entry.cell.getAttribute("data-live-state") === "running") {
      entry.stoppedAfter = (performance.now() - entry.began) / 1000;
      cells.showStopped(entry);
      first = first && entry.index === 0;
    }
  });
  page.answers.forEach(function (entry) {
    if (entry.output.textContent === "Checking\u2026") { entry.output.textContent = "Stopped."; first = false; }
  });
  stopPython(page, "Stopped. Every name the cells defined is kept.",
             "Stopped. Python has restarted" + (first ? "." : ": run the cells above again (Run cells above)."),
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
  var focused = document.activeElement === page.controls.undo;
  page.controls.undo.hidden = true;
  if (focused) page.controls.reset.focus();  // the button beside it, not the page's top
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
  // Alt+Shift+L (Option on a Mac, where event.key is a symbol: the key's code is read) goes to the
  // panel's controls from anywhere, an editor too (CodeMirror binds no such key).
  document.addEventListener("keydown", function (event) {
    if (event.code !== "KeyL" || !event.altKey || !event.shiftKey || event.ctrlKey || event.metaKey) return;
    event.preventDefault();
    goToControls(page);
  }, true);
  // Ctrl+. (Cmd+.) stops what runs, wherever the focus is: in an editor too (CodeMirror binds no such key).
  document.addEventListener("keydown", function (event) {
    if (event.key !== "." || !(event.ctrlKey || event.metaKey) || event.altKey || controls.stop.hidden) return;
    event.preventDefault();
    stopRunning(page);
  }, true);
}
