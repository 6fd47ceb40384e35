/*! lmchatkit diagram frame: renders one Mermaid diagram. Built into the bundle by
    scripts/build-ui.sh as lmchatkit-diagram-<hash>.js; the page {prefix}/diagram loads it after
    Mermaid itself. */
// It runs in a sandboxed frame (an opaque origin, no network, no access to the chat) that the UI
// makes for each ```mermaid block of a finished reply (frontend/src/components/diagrams.rs). The
// fragment of the frame's URL holds the theme and the diagram's source:
// `#<light|dark|system>,<source, URI-encoded>`. The frame answers its parent with one kind of
// message, `{lmchatkit: "diagram", height}` once drawn (and again when its size changes), or
// `{lmchatkit: "diagram", error}` with the parser's message. Nothing in either is secret (the
// parent wrote the source), so they go to any parent ("*"): an opaque origin cannot name the
// chat's.
(function () {
  "use strict";
  var root = document.getElementById("diagram");
  function post(message) {
    message.lmchatkit = "diagram";
    window.parent.postMessage(message, "*");
  }
  if (window.self === window.top || !root) {
    document.body.textContent = "This page only runs inside lmchatkit.";
    return;
  }
  var mermaid = globalThis.mermaid;
  if (!mermaid) {
    post({ error: "the diagram renderer did not load" });
    return;
  }
  var fragment = window.location.hash.slice(1);
  var comma = fragment.indexOf(",");
  var theme = comma < 0 ? "" : fragment.slice(0, comma);
  var source;
  try {
    source = decodeURIComponent(fragment.slice(comma + 1));
  } catch (e) {
    post({ error: "the diagram's source is not valid text" });
    return;
  }
  var dark = theme === "dark" ||
    (theme === "system" && window.matchMedia("(prefers-color-scheme: dark)").matches);
  document.documentElement.className = dark ? "dark" : "light";
  mermaid.initialize({
    startOnLoad: false,
    // Labels are text: no HTML, no click handlers, no links that run script.
    securityLevel: "strict",
    theme: dark ? "dark" : "default",
    // A failure is reported to the chat, which keeps the code; never Mermaid's error picture.
    suppressErrorRendering: true,
  });
  var last = -1;
  function size() {
    var height = Math.ceil(root.getBoundingClientRect().height);
    if (height !== last) {
      last = height;
      post({ height: height });
    }
  }
  mermaid.parse(source)
    .then(function () {
      return mermaid.render("lmck-diagram-svg", source);
    })
    .then(function (result) {
      root.innerHTML = result.svg;
      var svg = root.querySelector("svg");
      if (svg) {
        svg.setAttribute("role", "img");
        if (!svg.getAttribute("aria-label") && !svg.getAttribute("aria-labelledby")) {
          svg.setAttribute("aria-label", "Diagram");
        }
      }
      size();
      new ResizeObserver(size).observe(root);
    })
    .catch(function (e) {
      var message = (e && (e.message || e.str)) || String(e);
      post({ error: String(message).slice(0, 2000) });
    });
})();
