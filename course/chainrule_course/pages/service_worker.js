/* chainrule's service worker: the site's Python runtime kept across chapters and visits, and
 * pages that may share memory with their Python worker.
 *
 * The build copies this file to the site's root as service-worker.js (its scope is the whole
 * site) and writes the build's fingerprint of _static/live/ into VERSION; site.js, on
 * every page, registers it. It does two things, both to the site's own responses only:
 *
 * 1. Everything under _static/live/ (Pyodide, Graphviz, the editor, the two wheels) is
 *    served from a cache named after VERSION, and fetched once: the next chapter, and the
 *    next visit, start Python without downloading its 15 MB again. A new build has a new
 *    VERSION, so the browser installs the new worker, which deletes the old cache.
 * 2. Pages and workers' scripts get the headers that make them cross-origin isolated (COOP
 *    same-origin, COEP require-corp), which GitHub Pages cannot send: an isolated page may
 *    hand its Python worker a SharedArrayBuffer, Pyodide's interrupt buffer, so Stop
 *    interrupts a cell and keeps every name instead of restarting Python. The site loads
 *    nothing from other origins, so nothing is blocked by them. (The pattern of the
 *    coi-serviceworker project.) Everything else, the same origin's scripts, styles and
 *    data, needs no header under COEP, so it goes to the page as the cache (or the network)
 *    gave it, not copied into a new Response: no 15 MB streamed through this worker again,
 *    and Chromium may keep a script's compiled code beside the cached response.
 *
 * A page is controlled from its next load on; the first page also at once (clients.claim),
 * so its Python worker's downloads are cached, although that page itself is not isolated.
 */
"use strict";

var VERSION = "BUILD";
var CACHE = "chainrule-runtime-" + VERSION;
var RUNTIME = new URL("_static/live/", self.registration.scope).href;

self.addEventListener("install", function () { self.skipWaiting(); });

self.addEventListener("activate", function (event) {
  event.waitUntil(dropOldCaches().then(function () { return self.clients.claim(); }));
});

self.addEventListener("fetch", function (event) {
  var request = event.request;
  if (request.method !== "GET" || !request.url.startsWith(self.registration.scope)) return;
  if (request.cache === "only-if-cached" && request.mode !== "same-origin") return;
  var isolate = request.mode === "navigate" || request.destination === "worker" || request.destination === "sharedworker";
  event.respondWith(isolate ? fetchOwn(request).then(isolated) : fetchOwn(request));
});

function dropOldCaches() {
  return caches.keys().then(function (names) {
    return Promise.all(names.filter(function (name) {
      return name.startsWith("chainrule-runtime-") && name !== CACHE;
    }).map(function (name) { return caches.delete(name); }));
  });
}

// The runtime from the cache (fetched and kept the first time); anything else from the network.
function fetchOwn(request) {
  if (!request.url.startsWith(RUNTIME)) return fetch(request);
  return caches.open(CACHE).then(function (cache) {
    return cache.match(request).then(function (kept) {
      if (kept) return kept;
      return fetch(request).then(function (response) {
        if (response.ok && response.status === 200) cache.put(request, response.clone());
        return response;
      });
    });
  });
}

function isolated(response) {
  if (response.status === 0 || response.type === "opaqueredirect") return response;
  var headers = new Headers(response.headers);
  headers.set("Cross-Origin-Embedder-Policy", "require-corp");
  headers.set("Cross-Origin-Opener-Policy", "same-origin");
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers: headers });
}
