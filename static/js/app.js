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

// --- Checklist editor keyboard shortcuts -------------------------------------------------
// Ctrl+Enter adds the new criterion; Ctrl+S saves the criterion you are in at once;
// Alt+Up/Down moves it (into the neighbouring group at a group's edge), Alt+Shift+Up/Down
// moves it straight into the previous/next group; on a group's title Alt+Up/Down moves the
// group; "n" / "g" (outside a text field) jump to the new-criterion / new-group box.
// Keyboard moves go one at a time. The list a move answers with replaces the one the keys
// act on, so moves pressed while another is in flight wait, in order (queuedMoves), and are
// made one by one on the new lists: made at once, an answer would land in the list being
// replaced, or an older answer after it. moveInFlight = { form, settled, again }: `settled`
// gives the focus back, `again(way, shift)` moves the same criterion or group once more;
// between the swap of the new list and that focus, a key lands on the page itself and is
// queued with it.
let moveInFlight = null;
const queuedMoves = [];

function move(start) {
  queuedMoves.push(start);  // made in turn, each once the move before it has settled
  if (!moveInFlight) nextMove();
}

function nextMove() {
  // A move that asks nothing (no such button: the list's edge) lets the next one go.
  while (!moveInFlight && queuedMoves.length) queuedMoves.shift()();
}

function press(button, settled, again) {
  if (!button) return;
  moveInFlight = { form: button.form, settled, again };
  button.click();
}

function moveCriterion(id, direction) {
  const criterion = document.querySelector(`[data-criterion="${id}"]`);
  press(criterion?.querySelector(`[data-move="${direction}"]`), () => {
    const text = document.getElementById(`text-${id}`);
    for (let at = text?.closest("details[data-group]"); at; at = at.parentElement.closest("details[data-group]")) {
      at.open = true;  // unfold the groups it went into
    }
    text?.focus();
  }, (way, shift) => moveCriterion(id, shift ? `group-${way}` : way));
}

function moveGroup(id, way) {
  const group = document.querySelector(`details[data-group="${id}"]`);
  press(group?.querySelector(`:scope > .group-tools [data-group-move="${way}"]`), () => {
    document.querySelector(`details[data-group="${id}"] > summary`)?.focus();
  }, (way) => moveGroup(id, way));
}

function moveEnded(event, settled) {
  if (!moveInFlight || event.detail.requestConfig?.elt !== moveInFlight.form) return;
  if (settled) moveInFlight.settled();
  else queuedMoves.length = 0;  // a failed move drops those pressed after it
  moveInFlight = null;
  nextMove();
}

function typingIn(target) {
  return target.closest("input, textarea, select, [contenteditable]") !== null;
}

document.addEventListener("keydown", (event) => {
  const editor = document.querySelector("[data-editor][data-editable]");
  if (!editor) return;
  const target = event.target;
  const criterion = target.closest("[data-criterion]");
  if ((event.ctrlKey || event.metaKey) && event.key === "Enter" && target.id === "new-criterion-text") {
    event.preventDefault();
    target.form.requestSubmit();
  } else if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "s" && criterion) {
    event.preventDefault();
    htmx.trigger(criterion.querySelector(".criterion-form"), "save");
  } else if (event.altKey && (event.key === "ArrowUp" || event.key === "ArrowDown") && criterion) {
    event.preventDefault();
    const way = event.key === "ArrowUp" ? "up" : "down";
    const id = criterion.dataset.criterion;
    move(() => moveCriterion(id, event.shiftKey ? `group-${way}` : way));
  } else if (event.altKey && (event.key === "ArrowUp" || event.key === "ArrowDown") && target.matches(".group-summary")) {
    event.preventDefault();
    const id = target.closest("[data-group]").dataset.group;
    move(() => moveGroup(id, event.key === "ArrowUp" ? "up" : "down"));
  } else if (event.altKey && (event.key === "ArrowUp" || event.key === "ArrowDown") && moveInFlight && !typingIn(target)) {
    // The list was just swapped and the focus not yet given back: the same subject again.
    event.preventDefault();
    const again = moveInFlight.again;
    move(() => again(event.key === "ArrowUp" ? "up" : "down", event.shiftKey));
  } else if (event.key === "n" && !typingIn(target) && !event.ctrlKey && !event.metaKey && !event.altKey) {
    event.preventDefault();
    document.getElementById("new-criterion-text")?.focus();
  } else if (event.key === "g" && !typingIn(target) && !event.ctrlKey && !event.metaKey && !event.altKey) {
    event.preventDefault();
    document.getElementById("new-group-title")?.focus();
  }
});

// A group the expert folded stays folded when htmx redraws the list.
const foldedGroups = new Set();
document.addEventListener("toggle", (event) => {
  const group = event.target;
  if (!(group instanceof HTMLDetailsElement) || !group.matches("details[data-group]")) return;
  if (group.open) foldedGroups.delete(group.dataset.group);
  else foldedGroups.add(group.dataset.group);
}, true);

document.addEventListener("htmx:afterSettle", (event) => {
  // The summary, swapped out of band, may settle before the list it came with: wait for the
  // list, or the focus would go to an element about to be replaced.
  if (event.target.closest?.("#checklist-summary")) return;
  foldedGroups.forEach((id) => {
    const group = document.querySelector(`details[data-group="${id}"]`);
    if (group) group.open = false;
  });
  moveEnded(event, true);
});

// A move that failed (the error is shown above) frees the keys; a queued one is dropped.
["htmx:responseError", "htmx:sendError"].forEach((name) => {
  document.addEventListener(name, (event) => moveEnded(event, false));
});

// --- Without inline JavaScript ------------------------------------------------------------
// The Content-Security-Policy allows scripts only from our static files, so no template
// carries onchange= or hx-on: those behaviours live here, keyed by data attributes.

// <select data-autosubmit>: choosing an option submits its form (the button stays for
// browsers without JavaScript).
document.addEventListener("change", (event) => {
  const select = event.target.closest("[data-autosubmit]");
  if (select?.form) select.form.requestSubmit();
});

// <form data-reset-on-success>: after a successful htmx post, empty the form and put the
// cursor back in its text box, ready for the next criterion.
document.addEventListener("htmx:afterRequest", (event) => {
  const form = event.detail.elt.closest?.("form[data-reset-on-success]");
  if (form && event.detail.successful) {
    form.reset();
    form.querySelector("textarea")?.focus();
  }
});

// Source-type chips belong to fact criteria only: follow the Kind select of the same form.
document.addEventListener("change", (event) => {
  const select = event.target.closest(".criterion-form select[name=kind]");
  if (!select) return;
  select.form.querySelectorAll("[data-fact-only]").forEach((box) => {
    box.hidden = select.value !== "fact";
  });
});

// <form data-clears-messages>: an htmx request from it answers on the page itself, so the
// messages shown above (a "Judge created." from the page's load) are about something else
// by then: they go, and the request's own answer is the one thing left to read.
document.addEventListener("htmx:beforeRequest", (event) => {
  if (event.detail.elt.closest?.("form[data-clears-messages]")) {
    // base.html's live region of messages (a <div role=status> around their list).
    document.querySelectorAll("#main > .messages").forEach((region) => region.remove());
  }
});

// <button data-add-row="PREFIX">: one more row in a Django formset, made from its empty form
// (<template data-empty-row-of="PREFIX">) with __prefix__ numbered and TOTAL_FORMS counted
// up, so the server reads it as any other row; never past MAX_NUM_FORMS. Without
// JavaScript the button stays hidden and the page says how to get more rows.
function formsetParts(button) {
  const prefix = button.dataset.addRow;
  const form = button.form;
  return {
    form,
    total: form?.querySelector(`input[name="${prefix}-TOTAL_FORMS"]`),
    max: form?.querySelector(`input[name="${prefix}-MAX_NUM_FORMS"]`),
    template: form?.querySelector(`template[data-empty-row-of="${prefix}"]`),
    rows: form?.querySelector(`[data-rows-of="${prefix}"]`),
  };
}

function fullFormset(parts) {
  return Number(parts.total.value) >= Number(parts.max?.value ?? Infinity);
}

document.querySelectorAll("button[data-add-row]").forEach((button) => {
  const parts = formsetParts(button);
  if (!parts.total || !parts.template || !parts.rows) return;
  button.hidden = false;
  button.disabled = fullFormset(parts);
});

document.addEventListener("click", (event) => {
  const button = event.target.closest("button[data-add-row]");
  if (!button) return;
  const parts = formsetParts(button);
  if (!parts.total || !parts.template || !parts.rows || fullFormset(parts)) return;
  const index = Number(parts.total.value);
  const html = parts.template.innerHTML
    .replaceAll("__prefix__", String(index))
    .replaceAll("__row__", String(index + 1));
  parts.rows.insertAdjacentHTML("beforeend", html);
  parts.total.value = String(index + 1);
  button.disabled = fullFormset(parts);
  parts.rows.lastElementChild?.querySelector("select, input")?.focus();
});

// --- Copy buttons --------------------------------------------------------------------------
// A button with data-copy="some-id" copies that element's text (a ready-made request). It is
// hidden in the markup and shown here, so that without JavaScript no dead button shows.
document.querySelectorAll("button[data-copy]").forEach((button) => {
  button.hidden = false;
  button.addEventListener("click", async () => {
    const text = document.getElementById(button.dataset.copy)?.textContent ?? "";
    const label = button.textContent;
    try {
      await navigator.clipboard.writeText(text);
      button.textContent = "Copied";
    } catch {
      button.textContent = "Select the text to copy it";
    }
    setTimeout(() => { button.textContent = label; }, 2000);
  });
});
