/* chainrule explorables: step through a recorded run of the engine (chainrule/explore/widget.py).
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

    var setup = function (root) {
      if (root.getAttribute("data-ready") === "true") return;
      var source = root.querySelector('script[data-role="steps"]');
      if (!source) return;
      root.setAttribute("data-ready", "true");
      var data = JSON.parse(source.textContent);
      var prefix = data.prefix || "";
      var steps = data.steps;
      var last = steps.length - 1;
      var index = last;
      var timer = null;
      var find = function (selector) { return root.querySelector(selector); };
      var svg = find("svg");
      var svgTitle = svg && svg.querySelector("title");
      var status = find('[data-role="status"]');
      var formula = find('[data-role="formula"]');
      var slider = find('[data-role="slider"]');
      var predict = find('[data-role="predict"]');
      var guessForm = find('[data-role="guess-form"]');
      var guess = find('[data-role="guess"]');
      var revealed = {};
      var cells = root.querySelectorAll("[data-cell]");
      var example = find('[data-role="example"]');
      var chosen = 0;
      var setAttributes = function (attributes) {
        Object.keys(attributes || {}).forEach(function (id) {
          var target = element(id);
          if (!target) return;
          Object.keys(attributes[id]).forEach(function (name) {
            target.setAttribute(name, attributes[id][name]);
          });
        });
      };
      var buttons = {};
      ["reset", "previous", "play", "next"].forEach(function (action) {
        buttons[action] = find('[data-action="' + action + '"]');
      });
      var elements = {};
      var element = function (id) {
        if (!(id in elements)) elements[id] = root.querySelector('[id="' + prefix + id + '"]');
        return elements[id];
      };
      var setText = function (id, text) {
        var target = element(id);
        if (target) target.textContent = text;
      };
      var edgeIds = {};
      steps.forEach(function (step) { step.edges.forEach(function (id) { edgeIds[id] = true; }); });

      // A step whose number the reader has still to guess (predict mode only).
      var hidden = function (i) {
        return Boolean(predict && predict.checked && steps[i].quiz && !revealed[i]);
      };

      var show = function (target, message) {
        index = Math.max(0, Math.min(last, target));
        var step = steps[index];
        var masked = hidden(index);
        Object.keys(step.nodes).forEach(function (id) {
          var node = element(id);
          if (!node) return;
          NODE_CLASSES.forEach(function (name) { node.classList.remove(name); });
          node.classList.add(step.nodes[id]);
          if (id === step.target && masked && index > 0) {
            // Before the reveal the receiving box looks as it did before the step.
            NODE_CLASSES.forEach(function (name) { node.classList.remove(name); });
            node.classList.add(steps[index - 1].nodes[id]);
          }
          if (id === step.current) node.classList.add("cr-current");
          if (id === step.target) node.classList.add("cr-target");
        });
        Object.keys(edgeIds).forEach(function (id) {
          var edge = element(id);
          if (edge) edge.classList.toggle("cr-path", step.edges.indexOf(id) >= 0);
        });
        Object.keys(step.texts || {}).forEach(function (id) { setText(id, step.texts[id]); });
        setAttributes(step.attrs);
        if (step.grid) {
          for (var i = 0; i < cells.length; i += 1) cells[i].setAttribute("fill", data.palette[+step.grid[i]]);
        }
        if (step.examples) {
          var shown = step.examples[chosen];
          Object.keys(shown).forEach(function (id) { setText(id, shown[id]); });
        }
        if (step.later) {
          // Local gradients of the edges still to come: shown, unless the reader predicts them.
          var asking = predict && predict.checked;
          steps[0].later.forEach(function (id) { setText(id, element(id) ? originals[id] : ""); });
          if (asking) step.later.forEach(function (id) { setText(id, "?"); });
          if (masked) {
            step.edges.forEach(function (id) { setText("text-local-" + id.slice(5), "?"); });
            setText("text-grad-" + step.target.slice(5), "grad ?");
          }
        }
        data.lists.forEach(function (key) {
          var list = find('[data-list="' + key + '"]');
          if (list) list.textContent = step[key].length ? step[key].join(", ") : "none yet";
        });
        if (formula) formula.textContent = masked ? step.quiz.formula : step.formula;
        var counter = "Step " + (index + 1) + " of " + steps.length;
        status.textContent = counter + ". " + (message ? message + " " : "") +
          (masked ? step.quiz.sentence : step.sentence);
        slider.value = String(index);
        slider.setAttribute("aria-valuetext", counter);
        if (guessForm) {
          guessForm.hidden = !masked;
          if (masked) guess.setAttribute("aria-label", "Your guess for " + step.quiz.label);
        }
        if (svg) {
          svg.setAttribute("aria-label", step.alt);
          if (svgTitle) svgTitle.textContent = step.alt;
        }
        // Greyed at the ends, but never disabled: a disabled button drops the keyboard focus.
        buttons.previous.classList.toggle("cr-x-idle", index === 0);
        buttons.reset.classList.toggle("cr-x-idle", index === 0);
        buttons.next.classList.toggle("cr-x-idle", index === last);
      };
      // The texts of the local gradients as the final state shows them.
      var originals = {};
      if (steps[0].later) {
        steps[0].later.forEach(function (id) {
          var target = element(id);
          if (target) originals[id] = target.textContent;
        });
      }

      var pause = function () {
        if (timer !== null) window.clearInterval(timer);
        timer = null;
        buttons.play.textContent = "Play";
        root.classList.remove("cr-playing");
      };
      var play = function () {
        if (index === last) show(0);
        buttons.play.textContent = "Pause";
        root.classList.add("cr-playing");
        // With reduced motion the CSS has no transitions; play still steps, more slowly.
        timer = window.setInterval(function () {
          if (hidden(index)) { pause(); return; }  // wait for the reader's guess
          show(index + 1);
          if (index >= last || hidden(index)) pause();
        }, reducedMotion() ? 2 * PLAY_MS : PLAY_MS);
      };
      var go = function (target) {
        pause();
        // Moving on from a step still to guess shows its answer first.
        if (target > index && hidden(index)) {
          revealed[index] = true;
          show(index, "Shown without a guess.");
          return;
        }
        show(target);
        if (hidden(index) && guess) { guess.value = ""; }
      };

      buttons.reset.addEventListener("click", function () {
        revealed = {};  // a fresh start: every answer is hidden again in predict mode
        go(0);
      });
      buttons.previous.addEventListener("click", function () { go(index - 1); });
      buttons.next.addEventListener("click", function () { go(index + 1); });
      buttons.play.addEventListener("click", function () {
        if (timer === null) play(); else pause();
      });
      slider.addEventListener("input", function () { pause(); show(parseInt(slider.value, 10)); });
      root.addEventListener("keydown", function (event) {
        var tag = event.target.tagName;
        if (event.target === slider || tag === "SELECT" || tag === "INPUT" && event.target.type === "text" ||
            event.altKey || event.ctrlKey || event.metaKey) return;
        var keys = { ArrowLeft: index - 1, ArrowRight: index + 1, Home: 0, End: last };
        if (!(event.key in keys)) return;
        event.preventDefault();
        go(keys[event.key]);
      });
      if (example) {
        example.addEventListener("change", function () {
          chosen = parseInt(example.value, 10);
          setAttributes(data.rings[chosen]);
          show(index);
        });
      }
      if (predict) {
        predict.addEventListener("change", function () {
          revealed = {};
          show(index);
          if (hidden(index)) guess.focus();
        });
        guessForm.addEventListener("submit", function (event) {
          event.preventDefault();
          var step = steps[index];
          if (!hidden(index)) return;
          var number = parseGuess(guess.value);
          if (isNaN(number)) {
            show(index, "Type a number, such as 0.5 or \u22121.2, then press Check.");
            guess.focus();
            return;
          }
          revealed[index] = true;
          var answer = step.quiz.answer;
          var verdict = closeEnough(number, answer) ? "Right: " + guess.value.trim() + "." :
            "Not quite: you said " + guess.value.trim() + ", and it is " +
            step.formula.split(" = ").pop() + ".";
          show(index, verdict);
          buttons.next.focus();
        });
        find('[data-role="quiz-controls"]').hidden = false;
      }

      find('[data-role="controls"]').hidden = false;
      show(0);
      // A picture wider than the widget scrolls inside it; say so, as a scrollbar may be hidden.
      var hint = find('[data-role="scroll-hint"]');
      var boxes = root.querySelectorAll(".cr-x-figure, .cr-x-panel");
      var checkWidth = function () {
        var wide = false;
        for (var i = 0; i < boxes.length; i += 1) wide = wide || boxes[i].scrollWidth > boxes[i].clientWidth + 1;
        if (hint) hint.hidden = !wide;
      };
      checkWidth();
      window.addEventListener("resize", checkWidth);
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
