/* chainrule live code: the exercises' answer cells, imported by live.js.
 *
 * Under each checked exercise (data-exercises on live.js's script) goes its answer cell, with
 * Check, which runs the answer, then the notebook's check, in the page's Python, and shows the
 * verdict; a skip link after the theme's "Skip to main content" leads to each answer. An ES
 * module: live.js calls liveAnswers(api) with its page helpers (api: makeEditor, makeButton,
 * makeOutput, addText, enqueue, execute, startClock, stopPython, say, noteFirstOutput, save,
 * startLive, checkLimit, START; makeEditor, makeOutput and addText are live_cells.js's) and gets
 * back what sets up a page's exercises. A verdict is counted by progress.js's exercise().
 */
import { exercise as countExercise } from "./progress.js";

// What a check stopped at the time limit says, as the notebook does (exercises/calling.py).
var TOO_SLOW = "it is too slow for these inputs, or a loop in it never ends.";
// live.js's helpers (and live_cells.js's makeEditor, makeOutput, addText), given to liveAnswers.
var api = null;
var makeEditor, makeButton, makeOutput, addText, enqueue, execute, say, startClock, stopPython, save, noteFirstOutput;

export function liveAnswers(helpers) {
  api = helpers;
  ({ makeEditor, makeButton, makeOutput, addText, enqueue, execute, say, startClock, stopPython, save,
    noteFirstOutput } = helpers);
  return {
    numberExercise: numberExercise, addHint: addHint, addSkipLinks: addSkipLinks,
    goToAnswer: goToAnswer, focusAnswer: focusAnswer, setUpAnswer: setUpAnswer
  };
}

// After "Skip to Live code" (live.js: page.skips, on the theme's skip-link bar): a link to each
// exercise's answer cell, shown on the bar when focused. It starts Live code if need be, then puts
// the cursor in the answer: the intro's first checked answer is four key presses from the top.
function addSkipLinks(page) {
  var nav = page.skips;
  if (!nav) return;
  page.exercises.forEach(function (exercise) {
    var link = document.createElement("a");
    link.href = "#" + exercise.label + "-answer";
    link.textContent = "Skip to your answer to Exercise " + exercise.number;
    link.addEventListener("click", function (event) {
      event.preventDefault();
      goToAnswer(page, exercise);
    });
    nav.appendChild(link);
  });
}

function goToAnswer(page, exercise) {
  var started = page.editorsReady || api.startLive(page);
  started.then(function () { focusAnswer(page, exercise); });
}

// Once the answers are there (live.js calls it as they come, so that the focus is never lost).
function focusAnswer(page, exercise) {
  var entry = page.answers.filter(function (answer) { return answer.exercise === exercise; })[0];
  if (!entry) return;
  // CodeMirror focuses without scrolling: bring the answer to the middle of the screen.
  entry.editor.element.scrollIntoView({ block: "center" });
  entry.editor.focus();
}

// The exercise's number, from its title on the page ("Exercise N.M"); false when it is not there.
function numberExercise(exercise) {
  var box = document.getElementById(exercise.label);
  var caption = box && box.querySelector(".caption-number");
  if (!box) return false;
  var match = caption && /(\d+(\.\d+)*)/.exec(caption.textContent);
  exercise.number = match ? match[1] : exercise.label;
  return true;
}

// Before Live code: where the answer cell and the check are.
function addHint(exercise) {
  var hint = document.createElement("p");
  hint.className = "cr-live-hint";
  hint.setAttribute("data-live-hint", exercise.label);
  hint.textContent = "Answer Exercise " + exercise.number + " in this page: press \u201c" + api.START + "\u201d under the " +
    "chapter\u2019s title, write " + exercise.names.join(", ") + " in the answer cell that appears here, " +
    "and press Check. In a notebook, the answer cell is right under the exercise.";
  var box = document.getElementById(exercise.label);
  box.parentNode.insertBefore(hint, box.nextSibling);
}

function setUpAnswer(page, exercise) {
  var box = document.getElementById(exercise.label);
  var hint = document.querySelector('[data-live-hint="' + exercise.label + '"]');
  var entry = { exercise: exercise, output: makeOutput(), button: null };
  var kept = page.saved.answers[exercise.label];
  var onRun = function () { checkAnswer(page, entry); };
  entry.editor = makeEditor(page, kept ? kept.code : exercise.answer, "Answer to Exercise " + exercise.number,
                            onRun, function (value) { answerEdited(page, entry, value); });
  var check = entry.button = makeButton("Check", "check", "Check Exercise " + exercise.number);
  check.title = "Run your answer, then the exercise's check (Shift+Enter in the answer)";
  var again = makeButton("Reset answer", "reset-answer", "Reset answer to Exercise " + exercise.number);
  var block = document.createElement("div");
  block.className = "cr-live-answer";
  block.setAttribute("role", "group");
  block.setAttribute("aria-label", "Your answer to Exercise " + exercise.number);
  var title = addText(block, "p", "cr-live-answer-title", "Your answer to Exercise " + exercise.number +
                      " (kept in this browser)");
  title.id = exercise.label + "-answer";
  block.appendChild(entry.editor.element);
  block.appendChild(check);
  block.appendChild(again);
  block.appendChild(entry.output);
  // Into the page when live.js says: after every editor is made, so that making one forces no layout.
  entry.place = function () {
    if (hint) hint.remove();
    box.parentNode.insertBefore(block, box.nextSibling);
  };
  check.addEventListener("click", onRun);
  again.addEventListener("click", function () {
    entry.editor.value = exercise.answer;
    entry.output.textContent = "";
  });
  return entry;
}

function answerEdited(page, entry, value) {
  var label = entry.exercise.label;
  if (value === entry.exercise.answer) delete page.saved.answers[label];
  else page.saved.answers[label] = { code: value };
  save(page);
}

// Check: the answer cell, then the check cell, in the page's Python; a verdict with an icon.
// The check has the notebook's time limit, which the build writes on this script
// (data-check-limit, in seconds): past it, the check is interrupted, or Python restarts where
// a worker cannot be interrupted, and the verdict says what the notebook says (TOO_SLOW).
function checkAnswer(page, entry) {
  var exercise = entry.exercise;
  var generation = page.generation;
  var LIMIT_S = api.checkLimit();
  return enqueue(page, function () {
    if (generation !== page.generation) return false;
    entry.output.textContent = "Checking\u2026";
    page.lastRun = entry.button;  // Stop, pressed meanwhile, gives it the focus
    startClock(page, "the check of Exercise " + exercise.number);
    var timer = null;
    page.ready.then(function () {
      timer = window.setTimeout(function () {
        if (generation !== page.generation) return;
        verdict(page, entry, false, exercise.names.join(", ") + " did not return within " + LIMIT_S +
                " s and was stopped: " + TOO_SLOW);
        var stopped = "Exercise " + exercise.number + ": the check was stopped after " + LIMIT_S + " s";
        stopPython(page, stopped + "; every name is kept.", stopped + ", and Python has restarted; " +
                   "run the cells above again before the next check.");
      }, LIMIT_S * 1000);
    });
    var done = function (right, text) {
      window.clearTimeout(timer);
      return generation === page.generation && verdict(page, entry, right, text);
    };
    return execute(page, entry.editor.value, "page").then(function (answered) {
      if (generation !== page.generation) return false;
      if (answered.error) return done(false, "Your answer cell raised an error: " + missing(answered.error, exercise));
      return execute(page, numberedCheck(exercise), "page").then(function (checked) {
        if (generation !== page.generation) return false;
        // what the answer printed (the check shows its first lines, as in a notebook) follows the message
        var printed = checked.stdout ? "\n\n" + checked.stdout.replace(/\n$/, "") : "";
        if (checked.error) return done(false, missing(checked.error, exercise) + printed);
        return done(true, (checked.stdout || "The check passed.").replace(/\n$/, ""));
      });
    });
  });
}

// numpy, PyTorch and JAX are not in the page's Python: say so plainly, and where the check can
// run with one (only where the exercise allows it: in a notebook its check refuses the others too).
// The check cell as the notebooks run it, inside feedback.exercise(number): an answer cell
// not answered yet, or not run, is then one line that names the exercise by its number.
function numberedCheck(exercise) {
  var body = exercise.check.split("\n").map(function (line) { return line ? "    " + line : line; });
  return "from chainrule_course.exercises import feedback\nwith feedback.exercise(" +
    JSON.stringify(exercise.number) + "):\n" + body.join("\n");
}

function missing(error, exercise) {
  var found = new RegExp("No module named '(numpy|torch|jax)").exec(error);
  if (!found) return error;
  var name = { numpy: "numpy", torch: "PyTorch", jax: "JAX" }[found[1]];
  var allowed = exercise.allowed || [];
  if (allowed.indexOf(found[1]) >= 0) {
    return name + " is not available in the page's Python. Answer with Python's own numbers here, " +
      "or run this chapter in Colab or Jupyter, where the same check runs with " + name + ".";
  }
  return name + " is not available in the page's Python, and this exercise does not allow it anywhere: " +
    "in Colab and Jupyter too, its check runs the answer cell with " +
    (allowed.length ? allowed.join(", ") + " and " : "") + "Python's standard library only.";
}

function verdict(page, entry, right, text) {
  var output = entry.output;
  output.textContent = "";
  var line = addText(output, "pre", right ? "cr-live-right" : "cr-live-wrong", "");
  line.setAttribute("data-live-verdict", right ? "right" : "wrong");
  var icon = addText(line, "span", "cr-live-icon", right ? "\u2713 " : "\u2717 ");
  icon.setAttribute("aria-hidden", "true");
  line.appendChild(document.createTextNode((right ? "Right. " : "Not yet. ") + text));
  countExercise(entry.exercise.label, right);
  say(page, "Exercise " + entry.exercise.number + ": " + (right ? "your answer passes the check." :
      "your answer does not pass the check yet; the message is under the answer."));
  noteFirstOutput(page);
  return right;
}
