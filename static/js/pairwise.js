// Pairwise vote page keyboard: 1 / 2 pick an answer, t or 0 a tie, u undoes your last vote.
// Each key presses the page's own button (a plain form post), so the page works the same
// without JavaScript; keys do nothing while typing a reason.
"use strict";
(() => {
  const form = document.querySelector("[data-pairwise]");
  const undo = document.getElementById("pairwise-undo");
  const choices = { 1: "1", 2: "2", t: "tie", 0: "tie" };
  let sent = false;

  function typingIn(target) {
    return target.closest("input, textarea, select, [contenteditable]") !== null;
  }

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || typingIn(event.target) || sent) return;
    const choice = choices[event.key];
    const button = choice && form?.querySelector(`button[data-choice="${choice}"]`);
    if (button) {
      event.preventDefault();
      sent = true; // one vote per page: a held key never posts twice
      form.requestSubmit(button);
    } else if (event.key === "u" && undo) {
      event.preventDefault();
      sent = true;
      undo.closest("form").requestSubmit(undo);
    }
  });
})();
