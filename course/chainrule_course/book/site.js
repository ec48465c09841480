/* chainrule site script, on every page: registers the site's service worker
 * (service_worker.js, served from the site's root as service-worker.js), which keeps the
 * Python runtime across chapters and visits and lets Stop interrupt a cell. Over file://,
 * or where the browser has no service workers, the pages work as before without it. */
(function () {
  "use strict";
  var me = document.currentScript;
  if (!me || !("serviceWorker" in navigator) || !/^https?:$/.test(location.protocol)) return;
  var root = new URL("../../", me.src);  // this script is _static/live/site.js
  navigator.serviceWorker.register(new URL("service-worker.js", root).href, { scope: root.pathname })
    .catch(function (error) { console.warn("chainrule: no service worker (" + error.message + ")"); });
})();
