// patchd console behaviour: the phone menu, scrolling regions, confirmations, select-all boxes, fields shown by
// a choice, the CSRF header on htmx requests, and the passkey ceremonies (WebAuthn). No build step.
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
  // A list's filters (details.fold) are open on a wide screen and folded
  // behind their "Filters" button on a phone; without JavaScript they stay
  // open.
  var phone = window.matchMedia("(max-width: 640px)");
  function foldFilters() {
    document.querySelectorAll("details.fold").forEach(function (d) { d.open = !phone.matches; });
  }
  if (phone.addEventListener) { phone.addEventListener("change", foldFilters); }
  var resizing = 0;
  window.addEventListener("resize", function () {
    window.clearTimeout(resizing);
    resizing = window.setTimeout(markScrollers, 150);
  });
  document.addEventListener("DOMContentLoaded", foldFilters);
  document.addEventListener("htmx:afterSettle", markScrollers);
  document.addEventListener("DOMContentLoaded", init);
  document.addEventListener("DOMContentLoaded", markScrollers);
  // Writes carry the CSRF token in a header; reads (the live previews,
  // polling) need none and never carry it in their query string.
  document.addEventListener("htmx:configRequest", function (ev) {
    var token = document.body.getAttribute("data-csrf");
    if (token && ev.detail.verb !== "get") { ev.detail.headers["X-CSRF-Token"] = token; }
  });
  // Passkeys. A form with data-passkey="register" (the Account page) or
  // "signin" (the second-factor step) runs a WebAuthn ceremony instead of
  // posting: it asks its action for the options (JSON), hands them to
  // navigator.credentials, and posts the authenticator's answer as JSON to
  // the address without "/options". The server answers {"next": address},
  // or an error page whose message is shown beside the form (in the
  // element its data-error names, else #passkey-error).
  function fromB64u(s) {
    var b = window.atob(s.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((s.length + 3) % 4));
    var out = new Uint8Array(b.length);
    for (var i = 0; i < b.length; i++) { out[i] = b.charCodeAt(i); }
    return out.buffer;
  }
  function toB64u(buf) {
    var bytes = new Uint8Array(buf), b = "";
    for (var i = 0; i < bytes.length; i++) { b += String.fromCharCode(bytes[i]); }
    return window.btoa(b).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }
  function descriptors(list) {
    return (list || []).map(function (d) { return {type: d.type, id: fromB64u(d.id), transports: d.transports}; });
  }
  function postJSON(url, csrf, body) {
    return window.fetch(url, {method: "POST", credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-CSRF-Token": csrf}, body: JSON.stringify(body)});
  }
  // answer reads the server's answer: {next} on success, else the message
  // of its error page.
  function answer(resp) {
    if (resp.ok) { return resp.json(); }
    return resp.text().then(function (html) {
      var doc = new DOMParser().parseFromString(html, "text/html");
      var el = doc.querySelector("[role=alert]");
      throw new Error(el ? el.textContent.trim() : "The server answered " + resp.status + ".");
    });
  }
  function createOptions(o) {
    var pk = o.publicKey;
    pk.challenge = fromB64u(pk.challenge);
    pk.user.id = fromB64u(pk.user.id);
    pk.excludeCredentials = descriptors(pk.excludeCredentials);
    return {publicKey: pk};
  }
  function getOptions(o) {
    var pk = o.publicKey;
    pk.challenge = fromB64u(pk.challenge);
    pk.allowCredentials = descriptors(pk.allowCredentials);
    return {publicKey: pk};
  }
  function credentialJSON(cred) {
    var r = cred.response, out = {id: cred.id, rawId: toB64u(cred.rawId), type: cred.type,
      authenticatorAttachment: cred.authenticatorAttachment || undefined,
      clientExtensionResults: cred.getClientExtensionResults ? cred.getClientExtensionResults() : {}, response: {clientDataJSON: toB64u(r.clientDataJSON)}};
    if (r.attestationObject) {
      out.response.attestationObject = toB64u(r.attestationObject);
      out.response.transports = r.getTransports ? r.getTransports() : [];
    } else {
      out.response.authenticatorData = toB64u(r.authenticatorData);
      out.response.signature = toB64u(r.signature);
      if (r.userHandle) { out.response.userHandle = toB64u(r.userHandle); }
    }
    return out;
  }
  function ceremonyProblem(err) {
    if (err && err.name === "NotAllowedError") { return "The passkey request was cancelled or timed out, or no passkey of yours is on this device. Try again."; }
    if (err && err.name === "InvalidStateError") { return "This authenticator holds one of your passkeys already."; }
    return (err && err.message) || "The passkey request failed.";
  }
  document.addEventListener("submit", function (ev) {
    var form = ev.target, kind = form.getAttribute && form.getAttribute("data-passkey");
    if (!kind || ev.defaultPrevented) { return; }
    ev.preventDefault();
    var shown = document.getElementById(form.getAttribute("data-error") || "passkey-error");
    var button = form.querySelector("button[type=submit]");
    if (!window.PublicKeyCredential || !navigator.credentials) {
      shown.textContent = "This browser has no passkey support.";
      shown.hidden = false;
      return;
    }
    var csrf = form.elements.csrf.value;
    var options = form.getAttribute("action");
    var finish = options.replace(/\/options$/, "");
    var body = {};
    if (kind === "register") { body.name = form.elements.name.value; }
    if (form.elements.next) {
      finish += "?next=" + encodeURIComponent(form.elements.next.value) +
        (form.elements.method ? "&method=" + encodeURIComponent(form.elements.method.value) : "");
    }
    shown.hidden = true;
    button.disabled = true;
    postJSON(options, csrf, body).then(answer).then(function (o) {
      return kind === "register" ? navigator.credentials.create(createOptions(o)) : navigator.credentials.get(getOptions(o));
    }).then(function (cred) {
      return postJSON(finish, csrf, credentialJSON(cred)).then(answer);
    }).then(function (done) {
      window.location.assign(done.next);
    }).catch(function (err) {
      shown.textContent = ceremonyProblem(err);
      shown.hidden = false;
      button.disabled = false;
    });
  });
})();
