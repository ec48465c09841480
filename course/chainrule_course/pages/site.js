/* chainrule site script, on every page.
 *
 * It registers the site's service worker (service_worker.js, served from the site's root as
 * service-worker.js), which keeps the Python runtime across chapters and visits and lets Stop
 * interrupt a cell, from the first visit on (the page reloads once when the worker takes over). Where
 * the browser has no service workers, the pages work without it. The pages' scripts are ES modules,
 * which browsers load over HTTP only: serve the built site (python3 -m http.server), not file://.
 *
 * It also marks the figures that scroll sideways (and gives a code block that scrolls a tab stop). A figure keeps a minimum width at which its
 * smallest text is still legible (chainrule.figures), so on a phone, or in an opened solution,
 * it may be wider than its box, which then scrolls. Such a box gets a line under it that says
 * so, and a place in the keyboard's order, so that the arrow keys scroll it.
 *
 * An ES module, like every page script (python.js, progress.js, drill.js, live.js, ...): the build
 * loads each entry with <script type="module">, and an import map that it writes into the page
 * gives every module one URL (with the build's ?v= digest), so a module imported by two others,
 * or also loaded by a tag, runs once. The others import what they share from here: ownScript
 * (the tag that loaded a module, and its data-* attributes), whenParsed (their set-up, at
 * DOMContentLoaded as before), watchScrolling, and notePython (python.js: Python can run here). */

// The <script> element that loaded the module at ``url`` (its import.meta.url), whose data-*
// attributes the build wrote; null for a module only imported. The import map makes a module's
// URL the tag's own, ?v= included; the path alone is matched too, should a query ever differ.
export function ownScript(url) {
  const scripts = Array.from(document.scripts).filter((script) => script.src);
  const path = (href) => { const found = new URL(href); return found.origin + found.pathname; };
  return scripts.find((script) => script.src === url) ||
    scripts.find((script) => path(script.src) === path(url)) || null;
}

// Runs ``work`` at DOMContentLoaded, as the classic scripts did: a module runs before it (module
// scripts are deferred, and DOMContentLoaded waits for them), but also before the theme's own
// deferred scripts, which the page's set-up came after. At once when the event is past.
export function whenParsed(work) {
  const timing = performance.getEntriesByType ? performance.getEntriesByType("navigation")[0] : null;
  const past = document.readyState === "complete" || Boolean(timing && timing.domContentLoadedEventStart > 0);
  if (past) work();
  else document.addEventListener("DOMContentLoaded", () => work(), { once: true });
}

// Told by python.js: Python can run in this page (when it loads), and it has started (start()).
const python = { here: false, started: false };
export function notePython(started) {
  python.here = true;
  python.started = python.started || Boolean(started);
}

function registerServiceWorker() {
  if (!("serviceWorker" in navigator) || !/^https?:$/.test(location.protocol)) return;
  var root = new URL("../../", import.meta.url);  // this script is _static/live/site.js
  isolateOnFirstVisit();
  navigator.serviceWorker.register(new URL("service-worker.js", root).href, { scope: root.pathname })
    .catch(function (error) { console.warn("chainrule: no service worker (" + error.message + ")"); });
}

// On a first visit the page loads before the service worker exists, so it is not cross-origin
// isolated, and Stop could only restart Python and lose every name. The worker takes control at
// once (clients.claim), within a second; a page where Python can run (python.js) then reloads,
// once per tab, unless Python already runs in it. Whether it can is known once every module of the
// page has run (python.js says so when it runs): the worker may take control before, while a module
// is still on its way, so the decision waits for DOMContentLoaded, which follows them all.
function isolateOnFirstVisit() {
  if (navigator.serviceWorker.controller || window.crossOriginIsolated) return;
  var RELOADED = "chainrule-isolated-reload";
  navigator.serviceWorker.addEventListener("controllerchange", function () {
    whenParsed(function () {
      if (window.crossOriginIsolated || !python.here || python.started) return;
      try {
        if (window.sessionStorage.getItem(RELOADED)) return;  // reloaded once, and still not isolated
        window.sessionStorage.setItem(RELOADED, "1");
      } catch {
        return;  // no storage: no way to reload only once
      }
      location.reload();
    });
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

export function watchScrolling(root) {
  if (!observer) return;
  (root || document).querySelectorAll(".chainrule-figure, div.highlight > pre").forEach(function (box) {
    observer.observe(box);
  });
}

registerServiceWorker();
whenParsed(function () { watchScrolling(document); });
