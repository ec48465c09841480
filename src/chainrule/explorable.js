/* chainrule explorables: step through a recorded run of the engine (chainrule/explore.py).
 *
 * The page holds, per widget, an element [data-explorable] with an SVG whose nodes and
 * edges have ids, and the recorded steps as JSON in <script type="application/json"
 * data-role="steps">. This script only shows those steps: it sets CSS classes on the
 * SVG's nodes and edges, writes the lists and the status sentence, and wires the
 * controls. It defines itself once per page (window.chainruleExplorable) and sets up
 * every widget not set up yet, so a page with several widgets, each carrying this
 * script, runs it once. No framework, no network.
 */
(function () {
  "use strict";
  if (!window.chainruleExplorable) {
    var NODE_CLASSES = ["cr-unvisited", "cr-on-path", "cr-finished", "cr-not-reached", "cr-current"];
    var PLAY_MS = 1000;

    var reducedMotion = function () {
      return window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    };

    var setup = function (root) {
      if (root.getAttribute("data-ready") === "true") return;
      var source = root.querySelector('script[data-role="steps"]');
      if (!source) return;
      root.setAttribute("data-ready", "true");
      var data = JSON.parse(source.textContent);
      var steps = data.steps;
      var last = steps.length - 1;
      var index = last;
      var timer = null;
      var find = function (selector) { return root.querySelector(selector); };
      var svg = find("svg");
      var svgTitle = svg && svg.querySelector("title");
      var status = find('[data-role="status"]');
      var slider = find('[data-role="slider"]');
      var buttons = {};
      ["reset", "previous", "play", "next"].forEach(function (action) {
        buttons[action] = find('[data-action="' + action + '"]');
      });
      var elements = {};
      var element = function (id) {
        if (!(id in elements)) elements[id] = svg ? svg.querySelector('[id="' + id + '"]') : null;
        return elements[id];
      };
      var edgeIds = {};
      steps.forEach(function (step) { step.path.forEach(function (id) { edgeIds[id] = true; }); });

      var show = function (target) {
        index = Math.max(0, Math.min(last, target));
        var step = steps[index];
        Object.keys(step.nodes).forEach(function (id) {
          var node = element(id);
          if (!node) return;
          NODE_CLASSES.forEach(function (name) { node.classList.remove(name); });
          node.classList.add(step.nodes[id]);
          if (id === step.current) node.classList.add("cr-current");
        });
        Object.keys(edgeIds).forEach(function (id) {
          var edge = element(id);
          if (edge) edge.classList.toggle("cr-path", step.path.indexOf(id) >= 0);
        });
        data.lists.forEach(function (key) {
          var list = find('[data-list="' + key + '"]');
          if (list) list.textContent = step[key].length ? step[key].join(", ") : "none yet";
        });
        var counter = "Step " + (index + 1) + " of " + steps.length;
        status.textContent = counter + ". " + step.sentence;
        slider.value = String(index);
        slider.setAttribute("aria-valuetext", counter);
        if (svg) {
          svg.setAttribute("aria-label", step.alt);
          if (svgTitle) svgTitle.textContent = step.alt;
        }
        // Greyed at the ends, but never disabled: a disabled button drops the keyboard focus.
        buttons.previous.classList.toggle("cr-x-idle", index === 0);
        buttons.reset.classList.toggle("cr-x-idle", index === 0);
        buttons.next.classList.toggle("cr-x-idle", index === last);
      };

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
          show(index + 1);
          if (index >= last) pause();
        }, reducedMotion() ? 2 * PLAY_MS : PLAY_MS);
      };
      var go = function (target) { pause(); show(target); };

      buttons.reset.addEventListener("click", function () { go(0); });
      buttons.previous.addEventListener("click", function () { go(index - 1); });
      buttons.next.addEventListener("click", function () { go(index + 1); });
      buttons.play.addEventListener("click", function () {
        if (timer === null) play(); else pause();
      });
      slider.addEventListener("input", function () { go(parseInt(slider.value, 10)); });
      root.addEventListener("keydown", function (event) {
        if (event.target === slider || event.altKey || event.ctrlKey || event.metaKey) return;
        var keys = { ArrowLeft: index - 1, ArrowRight: index + 1, Home: 0, End: last };
        if (!(event.key in keys)) return;
        event.preventDefault();
        go(keys[event.key]);
      });

      find('[data-role="controls"]').hidden = false;
      show(0);
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
