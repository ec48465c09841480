/* chainrule progress: what a reader has practised, kept in this browser only (localStorage).
 *
 * One record, "chainrule-progress" (format 2): {format, book: {name, version}, answered,
 * drills: {kind: {attempts, right, last, level, streak, misses, mistake, mistakes, at}},
 * exercises: {label: {attempts, passed, last, done}}}. "answered" counts the drill answers
 * checked; a kind's "at" is the number of its last one, "streak" and "misses" the run of
 * right or wrong answers at its "level", "mistake" the one its last wrong answer made (where
 * the check named one) and "mistakes" how often each was made: the drills' Next for you
 * (chainrule_course.drills.schedule) plans from them, and `make progress` reads exported
 * records into a class's report. "book" is this edition of the drills and exercises
 * (data-book, written by the build), so that a record from another edition says so.
 * The drills (drill.js) and the in-page exercise checks (live_answers.js) import load, drill and
 * exercise from this ES module; on every page an exercise marked done, or whose last Check
 * passed, gets a small mark by its title; on the Practice page the element .cr-progress
 * becomes the Progress section: every drill kind and every exercise of the book, chapter by
 * chapter (this script's data-drills and data-exercises attributes, written by the build),
 * with Export, Import and Reset; at the end of each chapter, one line of its own record
 * (data-chapter: its drill kinds and exercises). Nothing leaves the reader's machine.
 */
import { ownScript, whenParsed } from "./site.js";

var KEY = "chainrule-progress";
var me = ownScript(import.meta.url);
var exercises = JSON.parse((me && me.getAttribute("data-exercises")) || "[]");
var drillKinds = JSON.parse((me && me.getAttribute("data-drills")) || "[]");
var chapter = JSON.parse((me && me.getAttribute("data-chapter")) || "null");
var book = JSON.parse((me && me.getAttribute("data-book")) || "null");

export function load() {
  var saved = {};
  try { saved = JSON.parse(window.localStorage.getItem(KEY) || "{}") || {}; } catch { /* a fresh one */ }
  return fresh(saved);
}

// The record in this edition's form: what an older record or an import lacks is added.
function fresh(saved) {
  var object = function (value) { return value && typeof value === "object" && !Array.isArray(value) ? value : {}; };
  var drills = object(saved.drills);
  // A record from before "answered" (format 1) has answered every attempt its drills count.
  var counted = Object.keys(drills).reduce(function (sum, kind) { return sum + ((drills[kind] || {}).attempts || 0); }, 0);
  return {
    format: 2, book: book || saved.book || null,
    answered: typeof saved.answered === "number" && saved.answered >= 0 ? saved.answered : counted,
    drills: drills, exercises: object(saved.exercises)
  };
}

function save(record) {
  try { window.localStorage.setItem(KEY, JSON.stringify(record)); } catch { /* refused: not kept */ }
}

// One answer counted in the record's group ("drills" or "exercises"); update(entry, record) adds the rest.
function count(group, key, right, update) {
  var record = load();
  var entry = record[group][key] || { attempts: 0, right: 0 };
  entry.attempts = (entry.attempts || 0) + 1;
  if (right) entry.right = (entry.right || 0) + 1;
  entry.last = new Date().toISOString();
  update(entry, record);
  record[group][key] = entry;
  save(record);
  showChapterLine();
  var section = document.querySelector(".cr-progress");  // the Practice page's tables, drawn again
  if (section) showProgress(section);
}

// One drill answer checked: its kind, whether right, the level asked and the mistake named (or null).
export function drill(kind, right, level, mistake) {
  count("drills", kind, right, function (entry, record) {
    if (entry.level !== level) { entry.streak = 0; entry.misses = 0; }  // a run counts at one level
    entry.level = level;
    entry.streak = right ? (entry.streak || 0) + 1 : 0;
    entry.misses = right ? 0 : (entry.misses || 0) + 1;
    entry.mistake = right ? null : mistake || null;
    if (!right && mistake) {
      entry.mistakes = entry.mistakes || {};
      entry.mistakes[mistake] = (entry.mistakes[mistake] || 0) + 1;
    }
    record.answered += 1;
    entry.at = record.answered;
  });
}

// One exercise checked in the page: whether its check passed.
export function exercise(label, passed) {
  count("exercises", label, passed, function (entry) { entry.passed = passed; });
}

whenParsed(setUp);

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

// A date short enough for a phone's table: "28 Nov, 17:40" in the reader's own form.
function when(iso) {
  var date = iso ? new Date(iso) : null;
  if (!date || isNaN(date.getTime())) return "\u2014";
  return date.toLocaleString(undefined, { day: "numeric", month: "short", hour: "2-digit", minute: "2-digit" });
}

// Right answers, and their share of the answers: "6 of 9 (67 %)".
function share(right, attempts) {
  return attempts ? right + " (" + Math.round(100 * right / attempts) + " %)" : "\u2014";
}

// A table in a box of its own that scrolls sideways where the window is narrower, and says so.
function scrolling(element, name) {
  var box = make("div", "cr-progress-scroll");
  box.setAttribute("role", "region");
  box.setAttribute("aria-label", name);
  box.tabIndex = 0;  // the keyboard scrolls it too
  box.appendChild(element);
  return box;
}

function noteOverflow(section) {
  [].slice.call(section.querySelectorAll(".cr-progress-scroll")).forEach(function (box) {
    var wide = box.scrollWidth > box.clientWidth + 1;
    var note = box.previousElementSibling;
    var noted = note && note.classList.contains("cr-progress-more");
    if (wide && !noted) box.parentNode.insertBefore(make("p", "cr-progress-more", "The table scrolls sideways \u2192"), box);
    if (!wide && noted) note.remove();
  });
}

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
  var totals = Object.keys(record.drills).reduce(function (sum, kind) {
    var entry = record.drills[kind] || {};
    return { attempts: sum.attempts + (entry.attempts || 0), right: sum.right + (entry.right || 0) };
  }, { attempts: 0, right: 0 });
  var drillChapter = { last: null };
  drillKinds.forEach(function (drill) {
    var entry = record.drills[drill.kind] || {};
    chapterRow(drills, drillChapter, drill.chapter, 4);
    var title = drill.title.charAt(0).toUpperCase() + drill.title.slice(1);
    row(drills, [title, String(entry.attempts || 0), share(entry.right || 0, entry.attempts || 0), when(entry.last)]);
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
    save(fresh({}));
    showProgress(section);
    section.querySelector(".cr-progress-status").textContent = "Progress reset.";
  });
  var summary = make("p", "cr-progress-summary", totals.attempts
    ? "Drills: " + totals.attempts + (totals.attempts === 1 ? " answer, " : " answers, ") + share(totals.right, totals.attempts) +
      " right. Exercises: " + exercises.filter(function (e) {
        var entry = record.exercises[e.label] || {};
        return entry.done || entry.passed;
      }).length + " of " + exercises.length + " done."
    : "No drill answered yet in this browser.");
  [buttons, status, summary, scrolling(drills, "Drills, by chapter"), scrolling(list, "Exercises, by chapter")]
    .forEach(function (e) { section.appendChild(e); });
  noteOverflow(section);
  if (!showProgress.watching) {
    showProgress.watching = true;
    window.addEventListener("resize", function () { noteOverflow(section); });
  }
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
    save(fresh(record));
    showProgress(section);
    section.querySelector(".cr-progress-status").textContent = "Progress imported from " + chosen.name + ".";
  }).catch(function (error) {
    status.textContent = "Could not import " + chosen.name + ": " + error.message + ".";
  });
}
