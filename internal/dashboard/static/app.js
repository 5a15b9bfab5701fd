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
  // A page that asks for it reloads itself while something is pending.
  var refresh = document.querySelector("[data-refresh-seconds]");
  if (refresh) {
    var seconds = parseInt(refresh.getAttribute("data-refresh-seconds"), 10);
    if (seconds > 0) { setTimeout(function () { window.location.reload(); }, seconds * 1000); }
  }
});
