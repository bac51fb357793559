// The answer page's trajectory search: show only the turns, passages and metadata whose
// text contains every word typed (case-insensitive), open the folded ones that match, and
// say how many match. Without JavaScript the whole trajectory is shown.
(() => {
  const section = document.querySelector("[data-timeline]");
  if (!section) return;
  const input = section.querySelector("[data-timeline-find]");
  const count = section.querySelector("[data-timeline-count]");
  const none = section.querySelector("[data-timeline-none]");
  const items = Array.from(section.querySelectorAll("[data-timeline-item]"));
  input.addEventListener("input", () => {
    const words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    let shown = 0;
    items.forEach((item) => {
      const text = item.textContent.toLowerCase();
      const match = words.every((w) => text.includes(w));
      item.hidden = !match;
      const folded = item.querySelector("details");
      if (folded) folded.open = match && words.length > 0;
      if (match) shown += 1;
    });
    count.textContent = words.length ? `${shown} of ${items.length} match` : "";
    none.hidden = shown > 0 || !words.length;
  });
})();
