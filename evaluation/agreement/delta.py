"""One label's or adjudication's change, applied to the kept agreement counts.

Every agreement count is a sum over items (`cells.item_cells`), so when one item changes,
the counts kept for revision R become the counts for the next revision by taking away the
item's own counts before the change and adding them after it: a few index look-ups, where
a recount reads every labelled item (4 s at 200,000 items on a quiet two-core machine). The
agreement page and API then stay warm while reviewers label, instead of the first reader
after every label paying the recount.

Why it stays right: the change runs inside the writer's transaction, and its first step is
the bump of the dataset's review revision, which locks the revision row until the
transaction ends. No other writer's bump, and so no other label or adjudication, can commit
between the counts read here and the ones stored, and readers see either the old revision
with the old counts or the new revision with the new ones. Only counts stored under the
revision before the bump are used (what a reader stored under an older number may include
later labels: see `selectors._cached_cells`). Outside a transaction nothing is applied;
the revision's own signals make the next reader recount, as every other write does.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection

from evaluation.agreement import cells as sql
from evaluation.agreement import revision
from evaluation.agreement.cells import Cell
from evaluation.agreement.selectors import _cache_key, _method, label_days
from evaluation.kept import figures as figure_cache
from evaluation.models import AgreementCache, Answer, HumanLabel, Run

Row = list  # a kept cell: [figure, value, other, first, second, n]


@contextmanager
def item_change(*, answer_id: int, criterion_id: int, label: bool) -> Iterator[None]:
    """Wrap the write of one item's label (`label`) or adjudication, in a transaction: the
    kept agreement counts of its dataset move with it."""
    if not connection.in_atomic_block:
        yield
        return
    found = Answer.objects.filter(pk=answer_id).values_list("query__dataset_id", "checklist_id")
    dataset_id, checklist_id = found.get()
    # Locks the dataset's revision row until commit.
    number = revision.changed(
        dataset_id, perfect_answers=checklist_id is not None, scores=not label
    )
    kept = _kept(dataset_id, number - 1)
    item = (answer_id, criterion_id)
    before = {key: _item(dataset_id, run, *item) for key, (run, _) in kept.items()}
    with revision.moved_for(answer_id):  # bumped above, once for the write
        yield
    for key, (run, rows) in kept.items():
        after = _item(dataset_id, run, *item)
        moved = apply(rows, minus=before[key], plus=after)
        if moved is not None:
            figure_cache.store(dataset_id, key.split(":", 1)[0], _cache_key(run, number), moved)


def apply(rows: list[Row], *, minus: list[Cell], plus: list[Cell]) -> list[Row] | None:
    """`rows` less the cells `minus`, plus the cells `plus`, as a recount would give them:
    a group whose count falls to zero disappears (a recount has no row for it), the named
    counts ("count") stay at zero. None when a count would fall below zero: the kept rows
    were not what the item's cells say, and a recount is the only safe answer."""
    totals: dict[tuple, int] = {}
    for row in rows:
        key = tuple(row[:5])
        totals[key] = totals.get(key, 0) + int(row[5])
    for sign, cells in ((-1, minus), (1, plus)):
        for cell in cells:
            key = (cell.figure, cell.value, cell.other, cell.first, cell.second)
            totals[key] = totals.get(key, 0) + sign * cell.n
    if any(n < 0 for n in totals.values()):
        return None
    return [[*key, n] for key, n in totals.items() if n or key[0] == "count"]


def _kept(dataset_id: int, number: int) -> dict[str, tuple[Run | None, list[Row]]]:
    """The agreement counts stored for the dataset at revision `number`, by cache key, with
    the run each was counted for (None: without a run). Keys are `selectors._cache_key`'s:
    the run's id first, the revision last; other figures' keys end in a hash."""
    stored = dict(
        AgreementCache.objects.filter(dataset_id=dataset_id, key__endswith=f":{number}")
        .values_list("key", "cells")
    )  # fmt: skip
    run_ids = {int(p) for key in stored if (p := key.split(":", 1)[0]).isdigit()}
    runs = Run.objects.filter(pk__in=run_ids, dataset_id=dataset_id) if run_ids else []
    expected: dict[str, Run | None] = {f"no-run:{number}": None}
    expected.update({_cache_key(run, number): run for run in runs})
    return {key: (expected[key], rows) for key, rows in stored.items() if key in expected}


def _item(dataset_id: int, run: Run | None, answer_id: int, criterion_id: int) -> list[Cell]:
    method, threshold = _method(run)
    found = sql.item_cells(
        dataset_id, run.pk if run else None, method=method, threshold=threshold,
        answer_id=answer_id, criterion_id=criterion_id,
    )  # fmt: skip
    labels = HumanLabel.objects.filter(answer_id=answer_id, criterion_id=criterion_id)
    return found + label_days(labels)
