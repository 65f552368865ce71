// patchd console behaviour: confirmations, select-all boxes, fields shown by
// a choice, and the CSRF header on htmx requests. No build step.
(function () {
  "use strict";
  document.addEventListener("submit", function (ev) {
    var btn = ev.submitter;
    var msg = (btn && btn.getAttribute("data-confirm")) || ev.target.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) { ev.preventDefault(); }
  });
  document.addEventListener("change", function (ev) {
    var t = ev.target;
    var all = t.getAttribute && t.getAttribute("data-check-all");
    if (all) {
      var form = t.form || document;
      form.querySelectorAll('input[type=checkbox][name="' + all + '"]').forEach(function (b) { b.checked = t.checked; });
    }
    if (t.hasAttribute && t.hasAttribute("data-toggle-group")) { sync(t.getAttribute("data-toggle-group")); }
  });
  function currentValue(group) {
    var el = document.querySelector('[data-toggle-group="' + group + '"]');
    if (!el) { return null; }
    if (el.type === "radio") {
      var on = document.querySelector('[data-toggle-group="' + group + '"]:checked');
      return on ? on.value : null;
    }
    return el.value;
  }
  function sync(group) {
    var v = currentValue(group);
    document.querySelectorAll('[data-group="' + group + '"]').forEach(function (el) {
      el.hidden = el.getAttribute("data-when") !== v;
    });
  }
  function init() {
    var seen = {};
    document.querySelectorAll("[data-toggle-group]").forEach(function (el) {
      var g = el.getAttribute("data-toggle-group");
      if (!seen[g]) { seen[g] = true; sync(g); }
    });
  }
  document.addEventListener("DOMContentLoaded", init);
  // Writes carry the CSRF token in a header; reads (the live previews,
  // polling) need none and never carry it in their query string.
  document.addEventListener("htmx:configRequest", function (ev) {
    var token = document.body.getAttribute("data-csrf");
    if (token && ev.detail.verb !== "get") { ev.detail.headers["X-CSRF-Token"] = token; }
  });
})();
