/* chainrule progress: what a reader has practised, kept in this browser only (localStorage).
 *
 * One record, "chainrule-progress": {drills: {kind: {attempts, right, last}},
 * exercises: {label: {attempts, passed, last, done}}}. The drills (drill.js) and the
 * in-page exercise checks (live.js) add to it through window.chainruleProgress; on every
 * page an exercise marked done, or whose last Check passed, gets a small mark by its
 * title; on the Practice page the element .cr-progress becomes the Progress section: every
 * drill kind and every exercise of the book, chapter by chapter (this script's data-drills
 * and data-exercises attributes, written by the build), with Export, Import and Reset; at
 * the end of each chapter, one line of its own record (data-chapter: its drill kinds and
 * exercises). Nothing leaves the reader's machine.
 */
(function () {
  "use strict";
  var KEY = "chainrule-progress";
  var me = document.currentScript;
  var exercises = JSON.parse((me && me.getAttribute("data-exercises")) || "[]");
  var drillKinds = JSON.parse((me && me.getAttribute("data-drills")) || "[]");
  var chapter = JSON.parse((me && me.getAttribute("data-chapter")) || "null");

  function load() {
    try {
      var saved = JSON.parse(window.localStorage.getItem(KEY) || "{}");
      return { drills: saved.drills || {}, exercises: saved.exercises || {} };
    } catch (error) {
      return { drills: {}, exercises: {} };
    }
  }

  function save(record) {
    try { window.localStorage.setItem(KEY, JSON.stringify(record)); } catch (error) { /* refused: not kept */ }
  }

  function count(group, key, right, extra) {
    var record = load();
    var entry = record[group][key] || { attempts: 0, right: 0 };
    entry.attempts += 1;
    if (right) entry.right = (entry.right || 0) + 1;
    entry.last = new Date().toISOString();
    Object.keys(extra || {}).forEach(function (name) { entry[name] = extra[name]; });
    record[group][key] = entry;
    save(record);
    showChapterLine();
  }

  window.chainruleProgress = {
    load: load,
    drill: function (kind, right) { count("drills", kind, right); },
    exercise: function (label, passed) { count("exercises", label, passed, { passed: passed }); }
  };

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setUp);
  else setUp();
  return;

  function setUp() {
    markExercises(load());
    var section = document.querySelector(".cr-progress");
    if (section) showProgress(section);
    showChapterLine();
  }

  // At the end of a chapter: what this browser keeps of its drills and exercises, in one line.
  function showChapterLine() {
    var article = chapter && document.querySelector("article.bd-article");
    if (!article) return;
    var line = article.querySelector(".cr-progress-line");
    if (!line) {
      line = make("p", "cr-progress-line");
      article.appendChild(line);
    }
    var record = load();
    var answers = 0, right = 0, done = 0;
    chapter.drills.forEach(function (kind) {
      var entry = record.drills[kind] || {};
      answers += entry.attempts || 0;
      right += entry.right || 0;
    });
    chapter.exercises.forEach(function (exercise) {
      var entry = record.exercises[exercise.label] || {};
      if (entry.done || entry.passed) done += 1;
    });
    var parts = [];
    if (chapter.drills.length) {
      parts.push(answers ? answers + (answers === 1 ? " drill answer, " : " drill answers, ") + right + " right"
        : "no drill answered yet");
    }
    if (chapter.exercises.length) parts.push(done + " of " + chapter.exercises.length + " exercises done");
    line.textContent = "Your practice in this chapter, kept in this browser: " + parts.join("; ") + ". ";
    var link = make("a", "", "The Practice page");
    link.href = chapter.practice + "#progress";
    line.appendChild(link);
    line.appendChild(document.createTextNode(" has the whole course's record."));
  }

  // A mark by the title of each exercise the reader finished: marked done, or its last Check passed.
  function markExercises(record) {
    Object.keys(record.exercises).forEach(function (label) {
      var entry = record.exercises[label];
      var box = document.getElementById(label);
      var title = box && box.querySelector(".admonition-title, p.admonition-title");
      if (!title || !(entry.done || entry.passed) || title.querySelector(".cr-progress-mark")) return;
      var mark = make("span", "cr-progress-mark", entry.done ? " \u2713 done" : " \u2713 check passed");
      title.appendChild(mark);
    });
  }

  function make(tag, className, text) {
    var element = document.createElement(tag);
    if (className) element.className = className;
    if (text) element.textContent = text;
    return element;
  }

  function when(iso) { return iso ? new Date(iso).toLocaleString() : "\u2014"; }

  function row(table, cells) {
    var tr = make("tr");
    cells.forEach(function (cell) {
      var td = make("td");
      if (typeof cell === "string") td.textContent = cell;
      else td.appendChild(cell);
      tr.appendChild(td);
    });
    table.appendChild(tr);
  }

  function table(caption, headings) {
    var element = make("table", "cr-progress-table");
    element.appendChild(make("caption", "", caption));
    var head = make("tr");
    headings.forEach(function (text) {
      var th = make("th", "", text);
      th.scope = "col";
      head.appendChild(th);
    });
    element.appendChild(head);
    return element;
  }

  // The Practice page's Progress section, drawn again after every change.
  function showProgress(section) {
    var record = load();
    section.textContent = "";
    var status = make("p", "cr-progress-status");
    status.setAttribute("aria-live", "polite");
    var drills = table("Drills", ["Drill", "Answers", "Right", "Last try"]);
    var drillChapter = { last: null };
    drillKinds.forEach(function (drill) {
      var entry = record.drills[drill.kind] || {};
      chapterRow(drills, drillChapter, drill.chapter, 4);
      var title = drill.title.charAt(0).toUpperCase() + drill.title.slice(1);
      row(drills, [title, String(entry.attempts || 0), String(entry.right || 0), when(entry.last)]);
    });
    var list = table("Exercises", ["Exercise", "Done", "Checked in the page"]);
    var exerciseChapter = { last: null };
    exercises.forEach(function (exercise) {
      chapterRow(list, exerciseChapter, exercise.chapter, 3);
      var entry = record.exercises[exercise.label] || {};
      var link = make("a", "", "Exercise " + exercise.number);
      link.href = exercise.page + "#" + exercise.label;
      var done = make("input");
      done.type = "checkbox";
      done.checked = Boolean(entry.done);
      done.setAttribute("aria-label", "Exercise " + exercise.number + " done");
      done.addEventListener("change", function () { markDone(exercise.label, done.checked); });
      var checks = !exercise.inPage ? "\u2014" : !entry.attempts ? "not yet"
        : entry.attempts + (entry.attempts === 1 ? " check, " : " checks, ") +
          (entry.passed ? "the last passed" : "the last did not pass") + " (" + when(entry.last) + ")";
      row(list, [link, done, checks]);
    });
    var buttons = make("div", "cr-progress-buttons");
    var exporter = make("button", "", "Export progress");
    var importer = make("button", "", "Import progress");
    var reset = make("button", "", "Reset progress");
    var file = make("input");
    file.type = "file";
    file.accept = "application/json,.json";
    file.hidden = true;
    [exporter, importer, reset].forEach(function (b) { b.type = "button"; buttons.appendChild(b); });
    buttons.appendChild(file);
    exporter.addEventListener("click", function () { exportRecord(status); });
    importer.addEventListener("click", function () { file.click(); });
    file.addEventListener("change", function () { importRecord(file, section, status); });
    reset.addEventListener("click", function () {
      if (!window.confirm("Forget every answer and mark kept in this browser?")) return;
      save({ drills: {}, exercises: {} });
      showProgress(section);
      section.querySelector(".cr-progress-status").textContent = "Progress reset.";
    });
    [buttons, status, drills, list].forEach(function (e) { section.appendChild(e); });
  }

  // A heading row before the first row of each chapter.
  function chapterRow(table, seen, chapter, columns) {
    if (chapter === seen.last) return;
    seen.last = chapter;
    var heading = make("tr", "cr-progress-chapter");
    var cell = make("th", "", chapter);
    cell.scope = "rowgroup";
    cell.colSpan = columns;
    heading.appendChild(cell);
    table.appendChild(heading);
  }

  function markDone(label, done) {
    var record = load();
    var entry = record.exercises[label] || { attempts: 0, right: 0 };
    entry.done = done;
    record.exercises[label] = entry;
    save(record);
  }

  function exportRecord(status) {
    var blob = new Blob([JSON.stringify(load(), null, 1)], { type: "application/json" });
    var link = make("a");
    link.href = URL.createObjectURL(blob);
    link.download = "chainrule-progress.json";
    document.body.appendChild(link);
    link.click();
    link.remove();
    status.textContent = "Progress saved as chainrule-progress.json.";
  }

  function importRecord(input, section, status) {
    var chosen = input.files && input.files[0];
    if (!chosen) return;
    chosen.text().then(function (text) {
      var record = JSON.parse(text);
      if (typeof record !== "object" || !record || typeof record.drills !== "object" ||
          typeof record.exercises !== "object") throw new Error("not a progress file");
      save({ drills: record.drills, exercises: record.exercises });
      showProgress(section);
      section.querySelector(".cr-progress-status").textContent = "Progress imported from " + chosen.name + ".";
    }).catch(function (error) {
      status.textContent = "Could not import " + chosen.name + ": " + error.message + ".";
    });
  }
})();
