// momopay dashboard: small improvements only; every action works without
// this file.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  // Copy buttons: shown only when the clipboard can be used.
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    if (!navigator.clipboard) { return; }
    button.hidden = false;
    button.addEventListener("click", function () {
      var field = document.getElementById(button.getAttribute("data-copy"));
      if (!field) { return; }
      navigator.clipboard.writeText(field.value).then(function () {
        var label = button.textContent;
        button.textContent = button.getAttribute("data-copied") || "Copied";
        setTimeout(function () { button.textContent = label; }, 2000);
      });
    });
  });
  // Secret fields select their whole value on focus, for copying by hand.
  document.querySelectorAll("input.secret-value").forEach(function (input) {
    input.addEventListener("focus", function () { input.select(); });
  });
  // A form sent back refused: the focus goes to its first refused field,
  // whose label and error (aria-describedby) a screen reader then reads,
  // or, for a refusal of no one field, to the message itself. A
  // role="alert" that is in the page as it loads is not announced by
  // every screen reader, and a keyboard user would otherwise start again
  // from the top of the page. A page that places the focus itself
  // (autofocus: the sign-in form, on the field to fill in again, which
  // its message describes) is left as it is.
  if (!document.querySelector("[autofocus]")) {
    var invalid = document.querySelector("main [aria-invalid='true']");
    var refusal = document.querySelector("main .error[role='alert']");
    if (invalid) {
      invalid.focus();
    } else if (refusal) {
      refusal.setAttribute("tabindex", "-1");
      refusal.focus();
    }
  }
  // A page that asks for it (a pending payment's) is read again every
  // few seconds in the background, and reloaded only when it no longer
  // asks (the payment ended) or the read was sent elsewhere (the session
  // ended: the sign-in page). Reloading it every time reset a keyboard
  // user's focus and a screen reader's place to the top of the page. An
  // error answer (a database restarting, a proxy) or no answer within 10 s
  // is tried again at the next look. A browser without fetch reloads.
  var refresh = document.querySelector("[data-refresh-seconds]");
  var seconds = refresh ? parseInt(refresh.getAttribute("data-refresh-seconds"), 10) : 0;
  if (seconds > 0 && !(window.fetch && window.DOMParser)) {
    setTimeout(function () { window.location.reload(); }, seconds * 1000);
  } else if (seconds > 0) {
    var look = function () {
      var abort = window.AbortController ? new AbortController() : null;
      var limit = abort ? setTimeout(function () { abort.abort(); }, 10000) : null;
      fetch(window.location.href, {credentials: "same-origin", cache: "no-store", signal: abort ? abort.signal : undefined}).then(function (answer) {
        if (!answer.ok) { throw new Error("HTTP " + answer.status); }
        return answer.text().then(function (html) {
          var page = new DOMParser().parseFromString(html, "text/html");
          return answer.redirected || !page.querySelector("[data-refresh-seconds]");
        });
      }).then(function (moved) {
        clearTimeout(limit);
        if (moved) { window.location.reload(); } else { setTimeout(look, seconds * 1000); }
      }).catch(function () {
        clearTimeout(limit);
        setTimeout(look, seconds * 1000);
      });
    };
    setTimeout(look, seconds * 1000);
  }
});
