/* chainrule live code: the page's code cells, imported by live.js.
 *
 * Each code cell (div.cell) becomes its number, an editor (CodeMirror, live_editor.js; a text box if it
 * cannot load) and "Run cell", in place of the built code, with its output ([data-live-output]) under them.
 * At once for the first cell and the cells edited before; then for cells in view (IntersectionObserver);
 * the others in idle moments (requestIdleCallback), once the first output is shown, or Python is ready with
 * nothing to run, or the runs end; and for a cell at once when the reader clicks or tabs into its code, or
 * it runs. Until then a cell shows the built code, and runs it. So the first output waits for one editor,
 * however many cells the page has: making a page's 135 at once took 0.3 s, the layouts they forced 0.3 s more.
 * While a cell runs, what it has printed so far shows under "Running…"; a cell stopped keeps it, and says
 * after how long it stopped (and at which line, when interrupted). An ES module: live.js calls
 * liveCells(api) (api: makeButton, save, runCells, noteFirstOutput) for these functions.
 */
import { watchScrolling } from "./site.js";

// A long output shows its first MAX_LINES lines, in a box that scrolls past about 40 lines,
// and a button that shows the rest: a 200,000-line print must not make a page miles long.
var MAX_LINES = 500;
var api = null;  // live.js's helpers, given to liveCells
var makeButton = null;

export function liveCells(helpers) {
  api = helpers;
  makeButton = helpers.makeButton;
  return {
    makeEditor: makeEditor, makeOutput: makeOutput, addText: addText, loadEditor: loadEditor,
    setUpCells: setUpCells, placeMade: placeMade, makeTheRest: makeTheRest, showRunning: showRunning, showPrinted: showPrinted,
    showResult: showResult, showStopped: showStopped, showEnded: showEnded
  };
}

function needs(code) {
  if (/\bjax\b/.test(code)) return "JAX";
  if (/\btorch\b/.test(code)) return "PyTorch";
  return "numpy and matplotlib";
}

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

// The editor of a cell or an answer: CodeMirror (live_editor.js) once loaded, a plain text box
// if it could not load. Either way {element, value, focus(), onFocus()}; setting value calls
// onEdit. Its description (aria-describedby) is the note of the keys (page.keysNote).
function makeEditor(page, code, label, onRun, onEdit) {
  if (page.codeEditor) return page.codeEditor(code, label, onRun, onEdit, page.keysNote);
  var area = document.createElement("textarea");
  area.className = "cr-live-editor";
  area.value = code;
  area.spellcheck = false;
  area.setAttribute("aria-label", label);
  if (page.keysNote) area.setAttribute("aria-describedby", page.keysNote);
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

// live_editor.js, which imports CodeMirror's modules (copied from npm's packages into cm/ by
// _ext/live_code.py) by their bare names: the page's import map, which the build writes before
// the first module script (a map added later is refused where a page may have only one), maps
// them to those files. Resolves to its makeCodeEditor, or null.
function loadEditor(base) {
  return import(base + "live_editor.js")
    .then(function (editor) { return editor.makeCodeEditor; })
    .catch(function () { return null; });
}

// Every cell's entry now (its code, Run button and output, not yet in the page); the editors
// of the first cell and of the cells edited before now, put in the page by placeMade; the
// others as they come into view or, later, in idle moments: the first output waits for none.
function setUpCells(page) {
  page.entries = page.cells.map(function (cell, index) { return setUpCell(page, cell, index); })
    .filter(Boolean);
  page.entries.forEach(function (entry, n) {
    if (n === 0 || entry.editor.value !== entry.original) entry.editor.make(true);
  });
}

// The editors made into the page, then the others watched for.
function placeMade(page) {
  page.entries.forEach(function (entry) { if (entry.editor.ready) entry.editor.make(); });
  watchCells(page);
}

// CodeMirror reads the page's selection as it makes an editor, which lays out the whole page
// if it changed since the last frame (0.1 to 0.4 s on a long chapter): so a batch of editors
// is made first, and put into the page after.
function makeAll(list) {
  list.forEach(function (entry) { entry.editor.make(true); });
  list.forEach(function (entry) { entry.editor.make(); });
}

function setUpCell(page, cell, index) {
  var input = cell.querySelector(".cell_input");
  var original = cell.querySelector(".cell_input pre").textContent.replace(/\n$/, "");
  var output = makeOutput();
  if (cell.classList.contains("tag_no-live")) return skipCell(page, cell, input, original, output);
  var kept = page.saved.cells[index];
  var entry = {
    cell: cell, output: output, original: original, index: index,
    space: cell.classList.contains("tag_solution") ? "solution" : "page", ran: false, printed: ""
  };
  entry.editor = lazyEditor(page, entry, kept && kept.original === original ? kept.code : original);
  entry.runButton = makeButton("Run cell", "run-cell", "Run cell " + (index + 1));
  entry.runButton.title = "Run this cell (Shift+Enter in the cell)";
  entry.runButton.addEventListener("click", function () { page.current = entry; api.runCells(page, [entry]); });
  // The built code stands for the editor until it comes: a click or a Tab into it brings it.
  var bring = function () { if (!entry.editor.made) entry.editor.focus(); };
  input.addEventListener("click", bring);
  input.addEventListener("focusin", bring);
  return entry;
}

// The cell's number, editor and Run button in place of the built code, and its output under them.
function placeCell(entry, editor) {
  var input = entry.cell.querySelector(".cell_input");
  var box = document.createElement("div");
  box.className = "cr-live-cell";
  var number = addText(box, "span", "cr-live-number", "Cell " + (entry.index + 1));
  number.setAttribute("aria-hidden", "true");  // the editor and its button carry the number in their names
  box.appendChild(editor);
  box.appendChild(entry.runButton);
  input.parentNode.insertBefore(box, input.nextSibling);
  box.parentNode.insertBefore(entry.output, box.nextSibling);
  entry.cell.setAttribute("data-live-editor", "");  // live.css: the built code hides
}

// The editor of ``entry``, made at the first need: until then its value is the code it will hold.
// ``make(later)``: the editor, in the page unless ``later``.
function lazyEditor(page, entry, code) {
  var made = null, placed = false;
  var make = function (later) {
    if (!made) {
      made = makeEditor(page, code, "Code of cell " + (entry.index + 1), function () { api.runCells(page, [entry]); },
                        function (value) { cellEdited(page, entry, value); });
      made.onFocus(function () { page.current = entry; });
    }
    if (!later && !placed) {
      placed = true;
      placeCell(entry, made.element);
    }
    return made;
  };
  return {
    make: make,
    get ready() { return Boolean(made); },
    get made() { return placed; },
    get element() { return make().element; },
    get value() { return made ? made.value : code; },
    set value(text) {
      if (made) { made.value = text; return; }
      code = text;
      cellEdited(page, entry, text);
      if (text !== entry.original) make();  // the built code on the page is no longer the cell's
    },
    focus: function () { make().focus(); }
  };
}

// The editors of the cells that come into view (or near it), as they do.
function watchCells(page) {
  if (!window.IntersectionObserver || !page.entries.length) return;
  var watched = page.entries.map(function (entry) { return entry.cell; });
  page.watching = new IntersectionObserver(function (seen) {
    makeAll(seen.filter(function (record) { return record.isIntersecting; }).map(function (record) {
      page.watching.unobserve(record.target);
      return page.entries[watched.indexOf(record.target)];
    }));
  }, { rootMargin: "200px 0px" });
  page.entries.forEach(function (entry) { if (!entry.editor.made) page.watching.observe(entry.cell); });
}

// The editors still to make, a few in each idle moment, in the page's order.
function makeTheRest(page) {
  if (page.makingTheRest || !page.entries.length) return;
  page.makingTheRest = true;
  var rest = page.entries.filter(function (entry) { return !entry.editor.made; });
  var later = window.requestIdleCallback || function (work) {
    return window.setTimeout(function () { work({ timeRemaining: function () { return 8; } }); }, 16);
  };
  var step = function (deadline) {
    var batch = [];
    do {
      var entry = rest.shift();
      if (entry && !entry.editor.made) { entry.editor.make(true); batch.push(entry); }
    } while (rest.length && deadline.timeRemaining() > 4);
    makeAll(batch);
    if (rest.length) later(step, { timeout: 400 });
    else if (page.watching) page.watching.disconnect();
  };
  later(step, { timeout: 400 });
}

// An edit is kept; once a cell has run, editing it makes the outputs below it out of date.
function cellEdited(page, entry, value) {
  page.current = entry;
  if (value === entry.original) delete page.saved.cells[entry.index];
  else page.saved.cells[entry.index] = { original: entry.original, code: value };
  api.save(page);
  if (!entry.ran) return;
  page.entries.forEach(function (other) {
    if (other.index > entry.index && other.ran) other.output.setAttribute("data-live-stale", "");
  });
}

function showRunning(entry) {
  entry.editor.make();  // a cell runs in place: its editor, button and output in the page
  entry.cell.setAttribute("data-live-state", "running");
  entry.output.removeAttribute("data-live-stale");  // the cell that runs says only that it runs
  entry.output.textContent = "Running\u2026";
  entry.printed = "";
  entry.began = performance.now();
}

// What the running cell has printed so far, under "Running…", at most once a frame.
function showPrinted(entry, text) {
  entry.printed = text;
  if (entry.drawing) return;
  entry.drawing = true;
  window.requestAnimationFrame(function () {
    entry.drawing = false;
    if (entry.cell.getAttribute("data-live-state") !== "running" || !entry.printed) return;
    var pre = entry.output.querySelector(".cr-live-stream") || addText(entry.output, "pre", "cr-live-stream", "");
    var shown = firstLines(entry.printed, MAX_LINES).replace(/\n$/, "");
    if (shown === pre.textContent) return;  // past MAX_LINES lines, nothing more to draw
    pre.textContent = shown;
    reachable(pre);
  });
}

function firstLines(text, count) {
  var at = -1;
  for (var line = 0; line < count; line += 1) {
    at = text.indexOf("\n", at + 1);
    if (at < 0) return text;
  }
  return text.slice(0, at);
}

// A stopped cell keeps what it printed, then says that it stopped, after how long and, when
// Python was interrupted, at which line. ``result``: the run's, when it has come back.
function showStopped(entry, result) {
  var output = entry.output;
  var printed = result ? (result.stdout || "") + (result.stderr || "") : entry.printed;
  var where = result && /^KeyboardInterrupt\b[^(]*\(line (\d+): (.*)\)$/.exec(result.error || "");
  output.textContent = "";
  output.removeAttribute("data-live-stale");
  if (printed) addLong(output, "cr-live-stream", printed.replace(/\n$/, ""));
  addText(output, "p", "cr-live-stopped", "Stopped after " + entry.stoppedAfter.toFixed(1) + " s" +
          (where ? ", at line " + where[1] + " (" + where[2] + ")" : "") + ".");
  entry.cell.setAttribute("data-live-state", "stopped");
}

// The result of a run the page no longer waits for (Stop or a crash came first).
function showEnded(page, entry, result) {
  var state = entry.cell.getAttribute("data-live-state");
  if (state === "stopped" && entry.stoppedAfter !== undefined) showStopped(entry, result);
  else if (state === "running") showResult(page, entry, result);  // Python crashed under it: it says so
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
    // explorable.js, the classic script a widget's HTML carries (as in a notebook), is on window.
    if (window.chainruleExplorable) window.chainruleExplorable.setupAll(shown);
    watchScrolling(shown);
  }
  entry.ran = true;
  entry.cell.setAttribute("data-live-state", result.error ? "error" : "done");
  api.noteFirstOutput(page);
}

function addLong(parent, className, text) {
  var lines = text.split("\n");
  var pre = addText(parent, "pre", className, lines.slice(0, MAX_LINES).join("\n"));
  if (lines.length > MAX_LINES) {
    var all = makeButton("Show all " + lines.length + " lines", "show-all");
    all.addEventListener("click", function () { pre.textContent = text; all.remove(); });
    parent.appendChild(all);
  }
  reachable(pre);
  return pre;
}

// A box that scrolls is reached by the keyboard too.
function reachable(pre) {
  window.requestAnimationFrame(function () {
    if (pre.scrollHeight > pre.clientHeight) pre.tabIndex = 0;
  });
}

function addText(parent, tag, className, text) {
  var element = document.createElement(tag);
  element.className = className;
  element.textContent = text;
  parent.appendChild(element);
  return element;
}
