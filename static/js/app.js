// Progressive enhancement only: every page works without this file.
"use strict";
document.addEventListener("htmx:responseError", (event) => {
  // Surface failed htmx requests instead of leaving the page silently unchanged.
  const status = event.detail.xhr.status;
  const box = document.createElement("div");
  box.className = "message error";
  box.setAttribute("role", "alert");
  box.textContent = status === 403 ? "Not allowed." : `The server answered ${status}. Please retry.`;
  document.querySelector("#main")?.prepend(box);
});
