"""Export rows for cross-evaluation overlaps: one row per cell (A, B) of every query's
matrix, self-checks included and marked. See docs/data-formats.md.

The rows respect nothing by themselves: callers check that the user may see overlaps (a
dataset's reviewers and admins) before exporting. Written as CSV, every text cell is made
safe against formula injection (`csv_safe`).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from typing import IO

from annotation.models import Dataset
from evaluation.cross_evaluation import selectors, sources
from evaluation.tables.formats import csv_safe  # one rule for every CSV the app writes

COLUMNS = (
    "dataset", "query", "a_checklist", "a_author", "b_checklist", "b_author", "is_self",
    "passed", "failed", "undecided", "total", "overlap", "source", "run",
)  # fmt: skip
__all__ = ["COLUMNS", "csv_safe", "overlap_rows", "write_csv"]


def overlap_rows(
    dataset: Dataset, source: sources.Source | None = None
) -> Iterator[dict[str, object]]:
    source = source or sources.Source("latest")
    for q in selectors.dataset_overlap(dataset, source).queries:
        names = {c.pk: c.author.get_username() for c in q.checklists}
        for a in q.checklists:
            for b in q.checklists:
                pair = q.matrix.cell(a.pk, b.pk)
                if pair is None:
                    continue
                yield {
                    "dataset": dataset.name, "query": q.query.pk, "a_checklist": a.pk,
                    "a_author": names[a.pk], "b_checklist": b.pk, "b_author": names[b.pk],
                    "is_self": pair.is_self, "passed": pair.passed, "failed": pair.failed,
                    "undecided": pair.undecided, "total": pair.total,
                    "overlap": "" if pair.overlap is None else round(pair.overlap, 6),
                    "source": str(source), "run": q.run.pk if q.run else "",
                }  # fmt: skip


def write_csv(rows: Iterable[dict[str, object]], out: IO[str]) -> None:
    writer = csv.DictWriter(out, fieldnames=COLUMNS)
    writer.writeheader()
    for row in rows:
        writer.writerow({k: csv_safe(v) for k, v in row.items()})
