// The side-by-side page: j and k move to the next and previous query's section (out of
// form fields), scrolling it into view and focusing it so that a screen reader reads it.
document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.key !== "j" && event.key !== "k") return;
  if (event.target.closest("input, textarea, select, [contenteditable]")) return;
  const pairs = Array.from(document.querySelectorAll("[data-pair]"));
  if (!pairs.length) return;
  event.preventDefault();
  const current = pairs.findIndex((p) => p.contains(document.activeElement));
  let next;
  if (current === -1) next = event.key === "j" ? 0 : pairs.length - 1;
  else next = Math.min(pairs.length - 1, Math.max(0, current + (event.key === "j" ? 1 : -1)));
  pairs[next].focus();
  pairs[next].scrollIntoView({ block: "start" });
});
