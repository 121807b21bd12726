/* Loaded between require.js and the ipywidgets embed manager (nb_ipywidgets_js in _config.yml).
 * The embed manager finds its icon fonts relative to its AMD module names ("@jupyter-widgets/..."),
 * which require.js resolves against the page's folder: map those names to the local copy in
 * _static/offline/html-manager/ so the fonts load from there, on every page depth and over file://. */
(function () {
  "use strict";
  var here = document.currentScript && document.currentScript.src;
  if (!here || !window.require || !window.require.config) return;
  var base = here.replace(/course\/widgets-config\.js(\?.*)?$/, "offline/html-manager");
  window.require.config({ paths: { "@jupyter-widgets/html-manager/dist": base, "@jupyter-widgets": base } });
})();
