// Review page keyboard: p / f label the current criterion and move on, j / k move, u undoes
// your last label on this answer, n opens the next item of the queue, ? toggles the help.
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

  function focusRow(row) {
    if (!row) return;
    rows().forEach((r) => r.classList.toggle("current", r === row));
    currentId = row.dataset.criterion;
    row.focus({ preventScroll: true });
    row.scrollIntoView({ block: "nearest" });
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
    return target.closest("input, textarea, select, button, summary, [contenteditable]") !== null;
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

  document.body.addEventListener("htmx:afterSettle", () => {
    // A swapped row is a new element: keep the highlight, and keep focus on the page.
    const row = current();
    if (row) row.classList.add("current");
    if (row && (document.activeElement === document.body || !document.activeElement)) focusRow(row);
    const labelled = list.querySelectorAll(".review-row.labelled").length;
    const counter = document.querySelector("[data-labelled]");
    if (counter) counter.textContent = labelled;
  });

  focusRow(current());
})();
