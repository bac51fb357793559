// Review page keyboard: p / f label the current criterion and move on, j / k move, u undoes
// your last label on this answer, n opens the next item of the queue, s skips this one,
// ? toggles the help. The Pass / Fail buttons are ordinary buttons in the Tab order too, with
// aria-pressed saying which label is yours.
// Writes go one after another (a promise chain) so that the server sees them in the order
// pressed, while focus moves at once: labelling never waits for the network.
"use strict";
(() => {
  const list = document.querySelector("[data-review]");
  if (!list) return;
  let writes = Promise.resolve();
  let currentId = list.dataset.current || null;

  const rows = () => Array.from(list.querySelectorAll(".review-row"));
  const rowById = (id) => document.getElementById(`row-${id}`);

  function focusRow(row, block = "nearest") {
    if (!row) return;
    rows().forEach((r) => r.classList.toggle("current", r === row));
    currentId = row.dataset.criterion;
    row.focus({ preventScroll: true });
    row.scrollIntoView({ block });
  }

  function current() {
    return (currentId && rowById(currentId)) || rows()[0];
  }

  function move(step) {
    const all = rows();
    const index = all.indexOf(current());
    focusRow(all[Math.min(Math.max(index + step, 0), all.length - 1)]);
  }

  function enqueue(request) {
    writes = writes.then(request).catch(() => {});
    return writes;
  }

  function label(value) {
    const row = current();
    if (!row) return;
    const id = row.dataset.criterion;
    enqueue(() =>
      htmx.ajax("POST", list.dataset.labelUrl, {
        source: list, target: `#row-${id}`, swap: "outerHTML",
        values: { criterion: id, label: value, run: list.dataset.run },
      }),
    );
    move(1);
  }

  function undo() {
    enqueue(() =>
      htmx.ajax("POST", list.dataset.undoUrl, {
        source: list, target: "#review-status", swap: "innerHTML",
        values: { run: list.dataset.run },
      }),
    );
  }

  function typingIn(target) {
    // Buttons and summaries are not typing: p / f on a focused Pass button still label.
    return target.closest("input, textarea, select, [contenteditable]") !== null;
  }

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || typingIn(event.target)) return;
    const actions = {
      p: () => label("pass"),
      f: () => label("fail"),
      j: () => move(1),
      k: () => move(-1),
      u: undo,
      n: () => document.getElementById("next-item")?.click(),
      s: () => document.getElementById("skip-item")?.click(),
      "?": () => { const help = document.querySelector(".shortcut-help"); help.open = !help.open; },
    };
    const action = actions[event.key];
    if (action) {
      event.preventDefault();
      action();
    }
  });

  list.addEventListener("focusin", (event) => {
    const row = event.target.closest(".review-row");
    if (row && row.dataset.criterion !== currentId) {
      currentId = row.dataset.criterion;
      rows().forEach((r) => r.classList.toggle("current", r === row));
    }
  });

  document.body.addEventListener("review-focus", (event) => focusRow(rowById(event.detail.criterion)));

  // A label button pressed with the mouse or by Enter / Space: once its row is swapped,
  // focus goes back to the same button in the new row, so Tab goes on from there.
  let pressed = null;
  list.addEventListener("click", (event) => {
    const button = event.target.closest(".label-form button");
    if (button) pressed = { row: button.closest(".review-row").dataset.criterion, value: button.value };
  });

  document.querySelector("[data-show-all]")?.addEventListener("click", (event) => {
    list.classList.remove("focused");
    event.target.closest(".focus-note")?.remove();
  });

  document.body.addEventListener("htmx:afterSettle", () => {
    // A swapped row is a new element: keep the highlight, and keep focus on the page.
    const row = current();
    if (row) row.classList.add("current");
    const lost = document.activeElement === document.body || !document.activeElement;
    const again = pressed && rowById(pressed.row)?.querySelector(`.label-form button[value="${pressed.value}"]`);
    pressed = null;
    if (lost && again) again.focus();
    else if (row && lost) focusRow(row);
    const labelled = list.querySelectorAll(".review-row.labelled").length;
    const counter = document.querySelector("[data-labelled]");
    if (counter) counter.textContent = labelled;
  });

  // Opened from a queue on one criterion: bring it to the middle of the view.
  focusRow(current(), list.dataset.current ? "center" : "nearest");
})();
