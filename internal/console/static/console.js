// patchd console behaviour: the phone menu, scrolling regions, confirmations, select-all boxes, fields shown by
// a choice, and the CSRF header on htmx requests. No build step.
(function () {
  "use strict";
  // Phones fold the menu behind the "Menu" button (without JavaScript it
  // stays open above the page).
  document.documentElement.classList.add("js");
  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest && ev.target.closest(".menu-toggle");
    if (!btn) { return; }
    var side = document.getElementById(btn.getAttribute("aria-controls"));
    var open = side.classList.toggle("open");
    btn.setAttribute("aria-expanded", open ? "true" : "false");
  });
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
  // A table or panel that scrolls (a wide table on a phone, a long list)
  // can be scrolled from the keyboard: it takes focus while it scrolls.
  function markScrollers() {
    document.querySelectorAll("main table, main div, main section").forEach(function (el) {
      var st = window.getComputedStyle(el);
      var scrolls = (/(auto|scroll)/.test(st.overflowX) && el.scrollWidth > el.clientWidth + 1) ||
        (/(auto|scroll)/.test(st.overflowY) && el.scrollHeight > el.clientHeight + 1);
      if (scrolls && !el.hasAttribute("tabindex")) {
        el.setAttribute("tabindex", "0");
        el.setAttribute("data-scroller", "");
      } else if (!scrolls && el.hasAttribute("data-scroller")) {
        el.removeAttribute("tabindex");
        el.removeAttribute("data-scroller");
      }
    });
  }
  var resizing = 0;
  window.addEventListener("resize", function () {
    window.clearTimeout(resizing);
    resizing = window.setTimeout(markScrollers, 150);
  });
  document.addEventListener("htmx:afterSettle", markScrollers);
  document.addEventListener("DOMContentLoaded", init);
  document.addEventListener("DOMContentLoaded", markScrollers);
  // Writes carry the CSRF token in a header; reads (the live previews,
  // polling) need none and never carry it in their query string.
  document.addEventListener("htmx:configRequest", function (ev) {
    var token = document.body.getAttribute("data-csrf");
    if (token && ev.detail.verb !== "get") { ev.detail.headers["X-CSRF-Token"] = token; }
  });
})();
