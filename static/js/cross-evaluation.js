// Perfect answer editor: Ctrl+Enter (Cmd+Enter) saves. The live preview is plain htmx.
"use strict";
document.addEventListener("keydown", (event) => {
  const box = event.target;
  if (!box.classList || !box.classList.contains("perfect-answer-text")) return;
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
    event.preventDefault();
    box.form.requestSubmit();
  }
});
