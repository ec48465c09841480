/* chainrule site script, on every page.
 *
 * It registers the site's service worker (service_worker.js, served from the site's root as
 * service-worker.js), which keeps the Python runtime across chapters and visits and lets Stop
 * interrupt a cell, from the first visit on (the page reloads once when the worker takes over). Over file://, or where the browser has no service workers, the pages work
 * as before without it.
 *
 * It also marks the figures that scroll sideways (and gives a code block that scrolls a tab stop). A figure keeps a minimum width at which its
 * smallest text is still legible (chainrule.figures), so on a phone, or in an opened solution,
 * it may be wider than its box, which then scrolls. Such a box gets a line under it that says
 * so, and a place in the keyboard's order, so that the arrow keys scroll it. */
(function () {
  "use strict";

  function registerServiceWorker(me) {
    if (!me || !("serviceWorker" in navigator) || !/^https?:$/.test(location.protocol)) return;
    var root = new URL("../../", me.src);  // this script is _static/live/site.js
    isolateOnFirstVisit();
    navigator.serviceWorker.register(new URL("service-worker.js", root).href, { scope: root.pathname })
      .catch(function (error) { console.warn("chainrule: no service worker (" + error.message + ")"); });
  }

  // On a first visit the page loads before the service worker exists, so it is not cross-origin
  // isolated, and Stop could only restart Python and lose every name. The worker takes control at
  // once (clients.claim), within a second; a page where Python can run (python.js) then reloads,
  // once per tab, unless Python already runs in it.
  function isolateOnFirstVisit() {
    if (navigator.serviceWorker.controller || window.crossOriginIsolated) return;
    var RELOADED = "chainrule-isolated-reload";
    navigator.serviceWorker.addEventListener("controllerchange", function () {
      if (window.crossOriginIsolated || !window.chainrulePython || window.chainrulePythonStarted) return;
      try {
        if (window.sessionStorage.getItem(RELOADED)) return;  // reloaded once, and still not isolated
        window.sessionStorage.setItem(RELOADED, "1");
      } catch {
        return;  // no storage: no way to reload only once
      }
      location.reload();
    });
  }

  function markIfScrolling(box) {
    var scrolls = box.clientWidth > 0 && box.scrollWidth > box.clientWidth + 1;
    if (!box.classList.contains("chainrule-figure")) {  // a code block: only a place in the keyboard's order
      if (scrolls) box.tabIndex = 0;
      else if (box.getAttribute("data-cr-scrolls") !== null) box.removeAttribute("tabindex");
      box.toggleAttribute("data-cr-scrolls", scrolls);
      return;
    }
    var hint = box.nextElementSibling;
    var marked = Boolean(hint && hint.classList.contains("cr-scroll-hint"));
    if (scrolls === marked) return;
    if (scrolls) {
      hint = document.createElement("p");
      hint.className = "cr-scroll-hint";
      hint.textContent = "Scroll the figure sideways to see all of it.";
      box.after(hint);
      box.tabIndex = 0;
      box.setAttribute("role", "group");
      box.setAttribute("aria-label", "Figure, scrolls sideways");
    } else {
      hint.remove();
      box.removeAttribute("tabindex");
      box.removeAttribute("role");
      box.removeAttribute("aria-label");
    }
  }

  // Figures and code blocks in ``root`` (the page, or an output Live code just showed), now and
  // whenever one's width changes: a turned phone, an opened solution (its figures had no width
  // while it was closed), Live code showing a cell's code again. The theme gives a code block
  // that scrolls a tab stop once, at load; this keeps it right after.
  var observer = "ResizeObserver" in window ? new ResizeObserver(function (entries) {
    entries.forEach(function (entry) { markIfScrolling(entry.target); });
  }) : null;

  function watchScrolling(root) {
    if (!observer) return;
    (root || document).querySelectorAll(".chainrule-figure, div.highlight > pre").forEach(function (box) {
      observer.observe(box);
    });
  }
  window.chainruleWatchScrolling = watchScrolling;

  registerServiceWorker(document.currentScript);
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { watchScrolling(document); });
  } else {
    watchScrolling(document);
  }
})();
