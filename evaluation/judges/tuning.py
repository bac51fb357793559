"""What tuning a judge changes in the runs that use it (issue 25).

A judge's worked examples may come from the dataset's adjudicated items; a run records, in
each member of its panel snapshot, the (answer, criterion) items its judge's examples were
taken from (`"example_items"`), and every agreement figure of that run leaves them out: a
judge shown an item's decision is not measured on it.
"""

from __future__ import annotations

from evaluation.models import Run


def excluded_items(run: Run) -> set[tuple[int, int]]:
    """(answer id, criterion id) of the items shown to the run's judges as examples."""
    items: set[tuple[int, int]] = set()
    for member in (run.snapshot or {}).get("members", ()):
        for answer_id, criterion_id in member.get("example_items", ()):
            items.add((int(answer_id), int(criterion_id)))
    return items
