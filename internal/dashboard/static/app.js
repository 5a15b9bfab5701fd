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
  // few seconds in the background, and reloaded only when what it shows
  // moved on: its version differs, or it has none (the payment ended, or
  // the session did). Reloading it every time reset a keyboard user's
  // focus and a screen reader's place to the top of the page.
  var refresh = document.querySelector("[data-refresh-seconds]");
  if (refresh) {
    var seconds = parseInt(refresh.getAttribute("data-refresh-seconds"), 10);
    var version = refresh.getAttribute("data-refresh-version");
    var look = function () {
      fetch(window.location.href, {credentials: "same-origin", cache: "no-store"}).then(function (answer) {
        return answer.text();
      }).then(function (html) {
        var now = new DOMParser().parseFromString(html, "text/html").querySelector("[data-refresh-seconds]");
        if (!now || now.getAttribute("data-refresh-version") !== version) {
          window.location.reload();
        } else {
          setTimeout(look, seconds * 1000);
        }
      }).catch(function () {
        setTimeout(look, seconds * 1000); // the network; try again later
      });
    };
    if (seconds > 0) { setTimeout(look, seconds * 1000); }
  }
});
