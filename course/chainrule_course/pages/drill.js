/* chainrule drills: a question on a fresh random instance, answered by the engine in the page's Python.
 *
 * Each element .cr-drill of the page (with its data-drill-title) becomes a drill of the kinds
 * its chapter teaches: the page's own (this script's data-chapter), or, on the Practice page,
 * the chapter its data-drill-chapter names. A drill: a kind and a level to choose, New question (a random seed), a seed to type
 * and share, the question with its instance in words (and its graph drawn, where it has one),
 * an answer box with Check, hints one at a time, and Show the steps (the worked steps, or a
 * widget of chainrule_course.explore stepping through the graph). The kinds, their levels and
 * the form of their answers come from this script's data-kinds (chainrule_course.drills.catalog,
 * written by the build); everything else a drill knows comes from chainrule_course.drills.page
 * (ask, check, steps, next_for_you), run in the page's one Python (python.js: a Web Worker shared with Live code), which
 * starts at the first New question: nothing is computed again in JavaScript.
 * The first answer checked of each question is counted by progress.js, in this browser only
 * (an empty or unreadable one is not; checking again counts nothing). "Next for you" asks chainrule_course.drills.schedule which of the drill's kinds
 * to practise from that record, at which level and on which instance; the kind, level and
 * seed it chose are set in the controls, where the reader can change them. data-drill-kinds="all"
 * offers every kind of the book (the Practice page's first drill). No page lists kinds: the
 * catalog is the one list of which chapter teaches which.
 *
 * An ES module (python.js, progress.js and site.js imported). The widget of Show the steps is
 * explorable.js, a classic script that the steps' HTML carries: it is found on window, as in a
 * notebook (window.chainruleExplorable, the one name on window the page's scripts read).
 */
import * as python from "./python.js";
import * as progress from "./progress.js";
import { ownScript, whenParsed } from "./site.js";

var me = ownScript(import.meta.url);
var base = new URL(".", import.meta.url).href;
var wheels = me.getAttribute("data-wheels");
var SIZE = me.getAttribute("data-runtime-size") || "about 15 MB";
var KINDS = JSON.parse(me.getAttribute("data-kinds") || "{}");
var CHAPTER = me.getAttribute("data-chapter");
var FORMS = {
  names: "Node names, separated by commas (a, e, L).",
  number: "A number: 0.25, -1.5, 1/3 or 2e-3.",
  count: "A whole number, such as 370.",
  numbers: "Numbers, separated by commas."
};
var drills = 0;

whenParsed(setUpAll);

function setUpAll() {
  var roots = document.querySelectorAll(".cr-drill");
  for (var i = 0; i < roots.length; i += 1) setUpDrill(roots[i]);
  if (roots.length) addSkipLink(roots[0]);
}

// Beside the theme's "Skip to main content", shown on its bar when focused: the keyboard reaches
// the page's first drill in two presses, as Live code's links reach an exercise's answer.
function addSkipLink(root) {
  var first = document.getElementById("pst-skip-link");
  var button = root.querySelector("button");
  if (!first || !button) return;
  var nav = make("nav", "skip-link d-print-none cr-drill-skips");
  nav.setAttribute("aria-label", "Skip to the drill");
  var link = make("a", "", "Skip to the first drill");
  link.href = "#" + (root.id || "");
  link.addEventListener("click", function (event) {
    event.preventDefault();
    root.scrollIntoView({ block: "start" });
    button.focus({ preventScroll: true });
  });
  nav.appendChild(link);
  first.parentNode.insertBefore(nav, first.nextSibling);
}

// --- the drills' Python: the page's one Python (python.js), shared with Live code ----------
// One of chainrule_course.drills.page's functions (ask, next_for_you, check, steps), in the page's
// Python, started if need be: python.js's call passes the arguments as JSON, never as source.
// What they return is JSON text (the HTML of the steps for steps).
function call(name, args) {
  return python.start(base, wheels).then(function () {
    return python.call("chainrule_course.drills.page", name, args);
  });
}

// --- one drill -------------------------------------------------------------------------
function make(tag, className, text) {
  var element = document.createElement(tag);
  if (className) element.className = className;
  if (text) element.textContent = text;
  return element;
}

function labelled(text, control) {
  var label = make("label", "cr-drill-field");
  label.appendChild(document.createTextNode(text + " "));
  label.appendChild(control);
  return label;
}

function choice(values, names) {
  var select = make("select");
  values.forEach(function (value, i) {
    var option = make("option", "", names[i]);
    option.value = value;
    select.appendChild(option);
  });
  return select;
}

function setUpDrill(root) {
  drills += 1;
  var chapter = root.getAttribute("data-drill-chapter") || CHAPTER;
  var kinds = Object.keys(KINDS).filter(function (k) {
    return root.getAttribute("data-drill-kinds") === "all" || KINDS[k].chapter === chapter;
  });
  if (!kinds.length) return;
  var title = "Drill: " + (root.getAttribute("data-drill-title") || "practice");
  root.textContent = "";
  if (!root.id) root.id = "cr-drill-" + drills;
  root.setAttribute("role", "region");
  root.setAttribute("aria-label", title);
  var d = {
    root: root, kinds: kinds, asked: null, hints: 0, checks: 0, lastVerdict: "", id: "cr-drill-" + drills,
    kind: choice(kinds, kinds.map(function (k) { return KINDS[k].title; })),
    level: make("select"), seed: make("input"), fresh: make("button", "", "New question"),
    next: make("button", "", "Next for you"),
    go: make("button", "", "Use this seed"), status: make("p", "cr-drill-status"), question: make("div", "cr-drill-question"),
    after: make("div", "cr-drill-after")
  };
  root.appendChild(make("p", "cr-drill-title", title));
  var controls = make("div", "cr-drill-controls");
  d.next.type = "button";
  d.next.setAttribute("aria-describedby", d.id + "-next-note");
  controls.appendChild(d.next);
  if (kinds.length > 1) controls.appendChild(labelled("Question", d.kind));
  showLevels(d);
  d.kind.addEventListener("change", function () { showLevels(d); });
  controls.appendChild(labelled("Level", d.level));
  d.seed.type = "number";
  d.seed.min = "0";
  d.seed.inputMode = "numeric";
  controls.appendChild(labelled("Seed", d.seed));
  [d.fresh, d.go].forEach(function (b) { b.type = "button"; controls.appendChild(b); });
  root.appendChild(controls);
  d.status.setAttribute("aria-live", "polite");
  d.status.textContent = "New question draws one; the first starts Python in this page (" + SIZE +
    ", downloaded once).";
  var note = make("p", "cr-drill-note", "Next for you chooses from your own record in this browser: a kind you " +
    "missed comes back two questions later, three right in a row move it on and raise its level.");
  note.id = d.id + "-next-note";
  root.appendChild(note);
  d.question.hidden = true;
  root.appendChild(d.question);
  root.appendChild(d.status);
  root.appendChild(d.after);
  d.fresh.addEventListener("click", function () { ask(d, Math.floor(Math.random() * 100000)); });
  d.next.addEventListener("click", function () { askNext(d); });
  d.go.addEventListener("click", function () {
    var seed = parseInt(d.seed.value, 10);
    if (seed >= 0) ask(d, seed);
    else say(d, "Type a seed: a whole number, 0 or more.");
  });
}

// The levels of the chosen kind; the level chosen stays when the new kind has it.
function showLevels(d) {
  var kind = d.kinds.length > 1 ? d.kind.value : d.kinds[0];
  var before = d.level.value;
  d.level.textContent = "";
  KINDS[kind].levels.forEach(function (level) {
    var option = make("option", "", level[1]);
    option.value = String(level[0]);
    d.level.appendChild(option);
  });
  if (before && d.level.querySelector('option[value="' + before + '"]')) d.level.value = before;
}

function say(d, text, verdict) {
  d.status.textContent = "";
  d.status.className = "cr-drill-status" + (verdict ? " cr-drill-" + verdict : "");
  if (verdict) d.status.appendChild(make("span", "cr-drill-icon", verdict === "right" ? "\u2713 " : "\u2717 "));
  d.status.appendChild(document.createTextNode(text));
}

function ask(d, seed) {
  var kind = d.kinds.length > 1 ? d.kind.value : d.kinds[0];
  var level = parseInt(d.level.value, 10);
  d.seed.value = String(seed);
  say(d, python.started() ? "Drawing a question\u2026" : "Starting Python in this page\u2026");
  call("ask", [kind, level, seed]).then(function (text) {
    present(d, JSON.parse(text), "Seed " + seed + ", level " + level + ": a new question.");
  }, function (error) {
    say(d, "Python could not answer: " + error.message);
  });
}

// The question the reader's record calls for (chainrule_course.drills.schedule), set in the controls.
function askNext(d) {
  var record = progress.load();
  say(d, python.started() ? "Choosing a question from your record\u2026" : "Starting Python in this page\u2026");
  var seed = Math.floor(Math.random() * 100000);
  call("next_for_you", [JSON.stringify(record), d.kinds, seed]).then(function (text) {
    var q = JSON.parse(text);
    if (d.kinds.length > 1) d.kind.value = q.kind;
    showLevels(d);
    d.level.value = String(q.level);
    d.seed.value = String(q.seed);
    var reason = q.reason.charAt(0).toUpperCase() + q.reason.slice(1);
    present(d, q, "Next for you: " + KINDS[q.kind].title + ", level " + q.level + ", seed " + q.seed + ". " + reason);
  }, function (error) {
    say(d, "Python could not choose: " + error.message);
  });
}

function present(d, q, said) {
  d.asked = q;
  d.counted = false;
  d.hints = 0;
  d.lastVerdict = "";
  showQuestion(d);
  d.asks = (d.asks || 0) + 1;  // changes on every question, even one as quick as the last
  d.root.setAttribute("data-drill-asks", String(d.asks));
  d.root.setAttribute("data-drill-asked", JSON.stringify({ kind: q.kind, level: q.level, seed: q.seed }));
  say(d, said + " Type your answer, then Check.");
  var input = d.question.querySelector("input");
  input.focus({ preventScroll: true });
  keepInView(d.question, input);
}

// After New question the question is read where it is: its start, and the answer box, in the window.
function keepInView(box, input) {
  var top = box.getBoundingClientRect().top;
  if (top < coveredTop() || input.getBoundingClientRect().bottom > window.innerHeight) box.scrollIntoView({ block: "start" });
}

// How far down the theme's sticky bars cover the window.
function coveredTop() {
  return [].slice.call(document.querySelectorAll(".bd-header, .bd-header-article")).reduce(function (most, bar) {
    var position = window.getComputedStyle(bar).position;
    var bottom = bar.getBoundingClientRect().bottom;
    return (position === "sticky" || position === "fixed") && bottom > most ? bottom : most;
  }, 0);
}

// A control that disables itself hands the focus on: to the next control that still works, or the answer box.
function handOn(d, button) {
  var next = [].slice.call(d.after.querySelectorAll(".cr-drill-more button")).filter(function (b) {
    return !b.disabled && b !== button;
  })[0];
  (next || d.question.querySelector("input")).focus();
}

function showQuestion(d) {
  var q = d.asked;
  var box = d.question;
  box.textContent = "";
  box.hidden = false;
  var prompt = make("p", "cr-drill-prompt", q.prompt);
  prompt.id = d.id + "-prompt";
  box.appendChild(prompt);
  var instance = make("div", "cr-drill-instance");  // the figure beside its words, where there is room
  if (q.figure) {
    var figure = make("div", "cr-drill-figure");
    figure.innerHTML = q.figure;
    instance.appendChild(figure);
  }
  var words = make("div", "cr-drill-in-words");
  words.appendChild(make("p", "cr-drill-words", q.words));
  var lines = make("ul", "cr-drill-lines");
  q.lines.forEach(function (line) { lines.appendChild(make("li", "", line)); });
  words.appendChild(lines);
  instance.appendChild(words);
  box.appendChild(instance);
  var form = make("form", "cr-drill-form");
  var input = make("input");
  input.type = "text";
  input.autocomplete = "off";
  input.spellcheck = false;
  input.id = d.id + "-answer";
  var format = make("span", "cr-drill-format", formHint(q));
  format.id = d.id + "-format";
  input.setAttribute("aria-describedby", prompt.id + " " + format.id);
  var check = make("button", "", "Check");
  check.type = "submit";
  form.appendChild(labelled("Your answer", input));
  form.appendChild(check);
  form.appendChild(format);
  form.addEventListener("submit", function (event) { event.preventDefault(); checkAnswer(d, input.value); });
  box.appendChild(form);
  var more = make("div", "cr-drill-more");
  var hint = make("button", "", "Hint (1 of " + q.hints.length + ")");
  var steps = make("button", "", "Show the steps");
  [hint, steps].forEach(function (b) { b.type = "button"; more.appendChild(b); });
  var hints = make("ol", "cr-drill-hints");
  hints.setAttribute("aria-live", "polite");  // a hint is read out as it appears
  hints.setAttribute("aria-label", "Hints");
  var stepsBox = make("div", "cr-drill-steps");
  hint.addEventListener("click", function () { showHint(d, hint, hints); });
  steps.addEventListener("click", function () { showSteps(d, steps, stepsBox); });
  d.after.textContent = "";
  [more, hints, stepsBox].forEach(function (e) { d.after.appendChild(e); });
}

// What to type, and how close a number must be (the tolerance the Python check uses, in its words).
function formHint(q) {
  return (q.formText || FORMS[q.answer]) + (q.tolerance ? " " + q.tolerance : "");
}

// The verdict, where the answer was typed; an empty or unreadable answer is not counted as one.
function checkAnswer(d, typed) {
  var q = d.asked;
  if (!typed.trim()) {
    say(d, "Type an answer first: " + formHint(q));
    keepVerdictInView(d);
    return;
  }
  call("check", [q.kind, q.level, q.seed, typed]).then(function (json) {
    var result = JSON.parse(json);
    var read = result.mistake !== "unreadable";
    // A question's first answer is the one its record keeps: checking again, or after the steps, counts nothing.
    var first = read && !d.counted;
    if (first) d.counted = true;
    if (first) progress.drill(q.kind, result.right, q.level, result.mistake);
    // "Not right." is said here, once: a wrong verdict's message opens with what is wrong or what to do.
    var text = (result.right ? "" : read ? "Not right. " : "") + result.message + (read ? "" : " (Not counted.)");
    d.checks = text === d.lastVerdict ? d.checks + 1 : 1;  // the same verdict again still shows that it ran
    d.lastVerdict = text;
    say(d, text + (d.checks > 1 ? " (the same verdict, check " + d.checks + ")" : ""), read ? (result.right ? "right" : "wrong") : "");
    keepVerdictInView(d);
  }, function (error) {
    say(d, "Python could not check it: " + error.message);
  });
}

// On a phone the verdict can fall below the window: it is scrolled up until it shows.
function keepVerdictInView(d) {
  if (d.status.getBoundingClientRect().bottom > window.innerHeight) d.status.scrollIntoView({ block: "end", behavior: "instant" });
}

function showHint(d, button, list) {
  var hints = d.asked.hints;
  if (d.hints >= hints.length) return;
  var item = make("li", "", hints[d.hints]);
  list.appendChild(item);
  d.hints += 1;
  if (d.hints < hints.length) button.textContent = "Hint (" + (d.hints + 1) + " of " + hints.length + ")";
  else {
    button.disabled = true;
    handOn(d, button);
  }
}

function showSteps(d, button, box) {
  var q = d.asked;
  button.disabled = true;
  handOn(d, button);
  say(d, "Working out the steps\u2026");
  call("steps", [q.kind, q.level, q.seed]).then(function (html) {
    box.innerHTML = html;
    if (!window.chainruleExplorable) {  // no widget on this page yet: run the one the HTML carries
      var code = box.querySelector("script:not([type])");
      if (code) {
        var script = document.createElement("script");
        script.textContent = code.textContent;
        document.body.appendChild(script);
      }
    }
    if (window.chainruleExplorable) window.chainruleExplorable.setupAll(box);
    var widget = box.querySelector("[data-explorable]");
    say(d, "The steps to the answer are below" + (widget ? ": step through the graph with Next step and Previous step." : "."));
  }, function (error) {
    button.disabled = false;
    say(d, "Python could not record the steps: " + error.message);
  });
}
