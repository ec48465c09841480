/* chainrule explorables: step through a recorded run of the engine (chainrule_course/explore/widget.py).
 *
 * The page holds, per widget, an element [data-explorable] with an SVG whose nodes,
 * edges and changing texts have ids, and the recorded steps as JSON in
 * <script type="application/json" data-role="steps">. This script only shows those
 * steps: it sets CSS classes on the SVG's nodes and edges, writes the texts, the lists,
 * the formula and the status sentence, and wires the controls. In "Predict, then
 * reveal" mode (steps with a quiz) it hides a step's number until the reader has
 * guessed it. It defines itself once per page (window.chainruleExplorable) and sets up
 * every widget not set up yet, so a page with several widgets, each carrying this
 * script, runs it once. No framework, no network.
 *
 * A classic script, not an ES module like the page scripts: widget.py inlines it into each widget's
 * HTML, which notebooks show too (JupyterLab, Colab), where an inline module could not be imported by
 * anything. So window.chainruleExplorable is the one name on window the pages' modules read
 * (drill.js and live_cells.js set up the widgets of an output they show).
 */
(function () {
  "use strict";
  if (!window.chainruleExplorable) {
    var NODE_CLASSES = ["cr-unvisited", "cr-on-path", "cr-finished", "cr-not-reached", "cr-current",
      "cr-pending", "cr-computed", "cr-waiting", "cr-partial", "cr-complete", "cr-target"];
    var PLAY_MS = 1000;

    var reducedMotion = function () {
      return window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    };

    // A reader's number: "-0.39", "−0.39" (a true minus) or "0,39" all count.
    var parseGuess = function (text) {
      var cleaned = String(text).trim().replace(/[\u2212\u2013]/g, "-").replace(",", ".");
      return /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(cleaned) ? parseFloat(cleaned) : NaN;
    };
    // Right when it agrees with the answer to the 4 digits the widget shows, or to 0.01.
    var closeEnough = function (guess, answer) {
      return Math.abs(guess - answer) <= Math.max(0.01, 0.005 * Math.abs(answer));
    };

    // One widget's state: what it shows, where it is, and the elements it changes.
    var readWidget = function (root, data) {
      var find = function (selector) { return root.querySelector(selector); };
      var svg = find("svg");
      var w = {
        root: root, data: data, prefix: data.prefix || "", steps: data.steps,
        last: data.steps.length - 1, index: data.steps.length - 1, timer: null,
        find: find, svg: svg, svgTitle: svg && svg.querySelector("title"),
        status: find('[data-role="status"]'), formula: find('[data-role="formula"]'),
        slider: find('[data-role="slider"]'), predict: find('[data-role="predict"]'),
        guessForm: find('[data-role="guess-form"]'), guess: find('[data-role="guess"]'),
        cells: root.querySelectorAll("[data-cell]"), lossChart: find('[data-role="loss-chart"] svg'),
        parameter: find('[data-role="parameter"]'), readout: find('[data-role="parameter-readout"]'),
        verdict: find('[data-role="verdict"]'), score: find('[data-role="score"]'),
        revealed: {}, tries: {}, right: {}, elements: {}, buttons: {}, edgeIds: {}, originals: {}
      };
      ["reset", "previous", "play", "next"].forEach(function (action) {
        w.buttons[action] = find('[data-action="' + action + '"]');
      });
      w.steps.forEach(function (step) { step.edges.forEach(function (id) { w.edgeIds[id] = true; }); });
      // The texts of the local gradients as the final state shows them.
      (w.steps[0].later || []).forEach(function (id) {
        var target = element(w, id);
        if (target) w.originals[id] = target.textContent;
      });
      return w;
    };

    var element = function (w, id) {
      if (!(id in w.elements)) w.elements[id] = w.root.querySelector('[id="' + w.prefix + id + '"]');
      return w.elements[id];
    };
    var setText = function (w, id, text) {
      var target = element(w, id);
      if (target) target.textContent = text;
    };
    var setAttributes = function (w, attributes) {
      Object.keys(attributes || {}).forEach(function (id) {
        var target = element(w, id);
        if (!target) return;
        Object.keys(attributes[id]).forEach(function (name) {
          target.setAttribute(name, attributes[id][name]);
        });
      });
    };

    // A step whose number the reader has still to guess (predict mode only).
    var hidden = function (w, i) {
      return Boolean(w.predict && w.predict.checked && w.steps[i].quiz && !w.revealed[i]);
    };

    // The classes of the graph's nodes and edges at this step.
    var paintGraph = function (w, step, masked) {
      Object.keys(step.nodes).forEach(function (id) {
        var node = element(w, id);
        if (!node) return;
        NODE_CLASSES.forEach(function (name) { node.classList.remove(name); });
        node.classList.add(step.nodes[id]);
        if (id === step.target && masked && w.index > 0) {
          // Before the reveal the receiving box looks as it did before the step.
          NODE_CLASSES.forEach(function (name) { node.classList.remove(name); });
          node.classList.add(w.steps[w.index - 1].nodes[id]);
        }
        if (id === step.current) node.classList.add("cr-current");
        if (id === step.target) node.classList.add("cr-target");
      });
      Object.keys(w.edgeIds).forEach(function (id) {
        var edge = element(w, id);
        if (edge) edge.classList.toggle("cr-path", step.edges.indexOf(id) >= 0);
      });
    };

    // The texts in the figures at this step: values, gradients, regions, weights.
    var paintTexts = function (w, step, masked) {
      Object.keys(step.texts || {}).forEach(function (id) { setText(w, id, step.texts[id]); });
      setAttributes(w, step.attrs);
      if (step.grid) {
        for (var i = 0; i < w.cells.length; i += 1) w.cells[i].setAttribute("fill", w.data.palette[+step.grid[i]]);
      }
      if (step.weights && w.parameter) {
        // The chosen weight (training): its line stands out, and its value and gradient are read out.
        var chosen = parseInt(w.parameter.value, 10);
        var lines = w.root.querySelectorAll("[data-param]");
        for (var k = 0; k < lines.length; k += 1) {
          lines[k].classList.toggle("cr-x-chosen", lines[k].getAttribute("data-param") === String(chosen));
        }
        w.readout.textContent = "= " + step.weights[chosen] + ", gradient of the loss " + step.grads[chosen];
      }
      if (step.later) {
        // Local gradients of the edges still to come: shown, unless the reader predicts them.
        var asking = w.predict && w.predict.checked;
        w.steps[0].later.forEach(function (id) { setText(w, id, element(w, id) ? w.originals[id] : ""); });
        if (asking) step.later.forEach(function (id) { setText(w, id, "?"); });
        if (masked) {
          step.edges.forEach(function (id) { setText(w, "text-local-" + id.slice(5), "?"); });
          setText(w, "text-grad-" + step.target.slice(5), "grad ?");
        }
      }
    };

    // The words around the figure at this step: lists, formula, status, controls, alt text.
    var paintWords = function (w, step, masked, message) {
      w.data.lists.forEach(function (key) {
        var list = w.find('[data-list="' + key + '"]');
        if (list) list.textContent = step[key].length ? step[key].join(", ") : "none yet";
      });
      if (w.formula) w.formula.textContent = masked ? step.quiz.formula : step.formula;
      var counter = step.counter || "Step " + (w.index + 1) + " of " + w.steps.length;
      w.status.textContent = counter + ". " + (message ? message + " " : "") +
        (masked ? step.quiz.sentence : step.sentence);
      w.slider.value = String(w.index);
      w.slider.setAttribute("aria-valuetext", counter);
      if (w.guessForm) {
        w.guessForm.hidden = !masked;
        if (masked) w.guess.setAttribute("aria-label", "Your guess for " + step.quiz.label);
      }
      if (w.svg) {
        w.svg.setAttribute("aria-label", step.alt);
        if (w.svgTitle) w.svgTitle.textContent = step.alt;
      }
      // aria-disabled at the ends (greyed by the CSS), never disabled: a disabled button
      // drops the keyboard focus. Pressed, it does nothing (go() stays at the end).
      w.buttons.previous.setAttribute("aria-disabled", String(w.index === 0));
      w.buttons.reset.setAttribute("aria-disabled", String(w.index === 0));
      w.buttons.next.setAttribute("aria-disabled", String(w.index === w.last));
    };

    var show = function (w, target, message) {
      w.index = Math.max(0, Math.min(w.last, target));
      var step = w.steps[w.index];
      var masked = hidden(w, w.index);
      paintGraph(w, step, masked);
      paintTexts(w, step, masked);
      paintWords(w, step, masked, message);
    };

    var pause = function (w) {
      if (w.timer !== null) window.clearInterval(w.timer);
      w.timer = null;
      w.buttons.play.textContent = "Play";
      w.root.classList.remove("cr-playing");
    };
    var play = function (w) {
      if (w.index === w.last) show(w, 0);
      w.buttons.play.textContent = "Pause";
      w.root.classList.add("cr-playing");
      // With reduced motion the CSS has no transitions; play still steps, more slowly.
      w.timer = window.setInterval(function () {
        if (hidden(w, w.index)) { pause(w); return; }  // wait for the reader's guess
        show(w, w.index + 1);
        if (w.index >= w.last || hidden(w, w.index)) pause(w);
      }, reducedMotion() ? 2 * PLAY_MS : PLAY_MS);
    };
    var go = function (w, target) {
      pause(w);
      if (w.verdict) w.verdict.hidden = true;  // a verdict is on the step it was given at
      // Moving on from a step still to guess shows its answer first.
      if (target > w.index && hidden(w, w.index)) {
        w.revealed[w.index] = true;
        show(w, w.index, "Shown without a guess.");
        return;
      }
      show(w, target);
      if (hidden(w, w.index) && w.guess) { w.guess.value = ""; }
    };

    // The buttons, the slider and the arrow keys (and the training widget's weights and loss curve).
    var wireControls = function (w) {
      w.buttons.reset.addEventListener("click", function () {
        w.revealed = {};  // a fresh start: every answer is hidden again in predict mode, the score is 0
        w.tries = {};
        w.right = {};
        if (w.verdict) showVerdict(w, null, "");
        go(w, 0);
      });
      w.buttons.previous.addEventListener("click", function () { go(w, w.index - 1); });
      w.buttons.next.addEventListener("click", function () { go(w, w.index + 1); });
      w.buttons.play.addEventListener("click", function () {
        if (w.timer === null) play(w); else pause(w);
      });
      w.slider.addEventListener("input", function () { pause(w); show(w, parseInt(w.slider.value, 10)); });
      w.root.addEventListener("keydown", function (event) {
        var tag = event.target.tagName;
        if (event.target === w.slider || tag === "SELECT" || tag === "INPUT" && event.target.type === "text" ||
            event.altKey || event.ctrlKey || event.metaKey) return;
        var keys = { ArrowLeft: w.index - 1, ArrowRight: w.index + 1, Home: 0, End: w.last };
        if (!(event.key in keys)) return;
        event.preventDefault();
        go(w, keys[event.key]);
      });
      if (w.parameter) wireTraining(w);
      w.find('[data-role="controls"]').hidden = false;
    };

    // Training: point at a weight's line (or choose it in the list) to read it; click the
    // loss curve to go to the step nearest the click.
    var wireTraining = function (w) {
      var choose = function (event) {
        var line = event.target.closest && event.target.closest("[data-param]");
        if (!line) return;
        w.parameter.value = line.getAttribute("data-param");
        show(w, w.index);
      };
      w.parameter.addEventListener("change", function () { show(w, w.index); });
      w.root.addEventListener("click", choose);
      w.root.addEventListener("mouseover", choose);
      if (!w.lossChart) return;
      w.lossChart.addEventListener("click", function (event) {
        var point = w.lossChart.createSVGPoint();
        point.x = event.clientX;
        point.y = event.clientY;
        var x = point.matrixTransform(w.lossChart.getScreenCTM().inverse()).x;
        var nearest = 0;
        w.steps.forEach(function (step, i) {
          var here = Math.abs(step.attrs["part-cursor"].x1 - x);
          if (here < Math.abs(w.steps[nearest].attrs["part-cursor"].x1 - x)) nearest = i;
        });
        go(w, nearest);
      });
    };

    // The verdict beside the guess, in colour and with an icon as well as in words, and the score.
    var showVerdict = function (w, right, words) {
      w.verdict.hidden = right === null;
      w.verdict.className = "cr-x-verdict " + (right ? "cr-right" : "cr-wrong");
      w.verdict.innerHTML = "";
      var icon = document.createElement("span");
      icon.setAttribute("aria-hidden", "true");
      icon.textContent = right ? "\u2713 " : "\u2717 ";
      w.verdict.appendChild(icon);
      w.verdict.appendChild(document.createTextNode(words));
      var asked = Object.keys(w.tries).length;
      w.score.hidden = asked === 0;
      w.score.textContent = "Score: " + Object.keys(w.right).length + " of " + asked + " right at the first try";
    };

    // The reader's guess in "Predict, then reveal" mode: a wrong first guess may be tried
    // again; a right guess, or a second wrong one, shows the step.
    var checkGuess = function (w) {
      var step = w.steps[w.index];
      if (!hidden(w, w.index)) return;
      var number = parseGuess(w.guess.value);
      if (isNaN(number)) {
        show(w, w.index, "Type a number, such as 0.5 or \u22121.2, then press Check.");
        w.guess.focus();
        return;
      }
      var said = w.guess.value.trim();
      w.tries[w.index] = (w.tries[w.index] || 0) + 1;
      var slip = (step.quiz.mistakes || []).filter(function (m) { return closeEnough(number, m[0]); })[0];
      if (closeEnough(number, step.quiz.answer)) {
        if (w.tries[w.index] === 1) w.right[w.index] = true;  // the score counts first tries
        w.revealed[w.index] = true;
        showVerdict(w, true, "Right");
        show(w, w.index, "Right: " + said + ".");
        w.buttons.next.focus();
      } else if (w.tries[w.index] === 1) {
        showVerdict(w, false, "Not quite");
        show(w, w.index, "Not quite: " + (slip ? slip[1] : said + " is not it.") +
             " Try once more, or press Next step to see it.");
        w.guess.select();
      } else {
        w.revealed[w.index] = true;
        showVerdict(w, false, "Not quite");
        show(w, w.index, "Not quite: you said " + said + ", and it is " + step.formula.split(" = ").pop() + ".");
        w.buttons.next.focus();
      }
    };
    var negate = function (w) {
      var text = w.guess.value.trim();
      w.guess.value = /^[-\u2212]/.test(text) ? text.slice(1) : "\u2212" + text;
      w.guess.focus();
    };
    var wireQuiz = function (w) {
      if (!w.predict) return;
      w.predict.addEventListener("change", function () {
        w.revealed = {};
        w.tries = {};
        w.right = {};
        showVerdict(w, null, "");
        show(w, w.index);
        if (hidden(w, w.index)) w.guess.focus();
      });
      w.guessForm.addEventListener("submit", function (event) {
        event.preventDefault();
        checkGuess(w);
      });
      w.find('[data-action="negate"]').addEventListener("click", function () { negate(w); });
      w.find('[data-role="quiz-controls"]').hidden = false;
    };

    // A picture wider than the widget scrolls inside it; say so, as a scrollbar may be hidden.
    var watchWidth = function (w) {
      var hint = w.find('[data-role="scroll-hint"]');
      var boxes = w.root.querySelectorAll(".cr-x-figure, .cr-x-panel");
      var checkWidth = function () {
        var wide = false;
        for (var i = 0; i < boxes.length; i += 1) wide = wide || boxes[i].scrollWidth > boxes[i].clientWidth + 1;
        if (hint) hint.hidden = !wide;
      };
      checkWidth();
      window.addEventListener("resize", checkWidth);
    };

    var setup = function (root) {
      if (root.getAttribute("data-ready") === "true") return;
      var source = root.querySelector('script[data-role="steps"]');
      if (!source) return;
      root.setAttribute("data-ready", "true");
      var w = readWidget(root, JSON.parse(source.textContent));
      wireControls(w);
      wireQuiz(w);
      show(w, 0);
      watchWidth(w);
    };

    window.chainruleExplorable = {
      setup: setup,
      setupAll: function (scope) {
        var roots = (scope || document).querySelectorAll("[data-explorable]");
        for (var i = 0; i < roots.length; i += 1) setup(roots[i]);
      }
    };
  }
  // This copy of the script sits right after its widget: set that one up, then any other
  // widget of the page whose script has not run (or was stripped).
  var me = document.currentScript;
  if (me && me.parentNode) window.chainruleExplorable.setupAll(me.parentNode);
  window.chainruleExplorable.setupAll(document);
})();
