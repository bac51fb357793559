"""One label's or adjudication's change, applied to the kept agreement counts.

Every agreement count is a sum over items (`cells.item_cells`), so when one item changes,
the counts kept for revision R become the counts for the next revision by taking away the
item's own counts before the change and adding them after it: a few index look-ups, where
a recount reads every labelled item (4 s at 200,000 items on a quiet two-core machine). The
agreement page and API then stay warm while reviewers label, instead of the first reader
after every label paying the recount.

Why it stays right: the change runs inside the writer's transaction, and its write comes
after the bump of the dataset's review counters (`evaluation.kept.events.bump`), which locks
the counter row until the transaction ends. No other writer's bump, and so no other label or
adjudication, can commit between the counts read here and the ones stored, and readers see
either the old revision with the old counts or the new revision with the new ones. Only
counts kept under the revision before the bump are used (what a reader kept under an older
number may include later labels: see `selectors._cached_cells`). Outside a transaction
nothing is applied: the write is bumped after it is made, and the next reader recounts.

The item's counts before the write are read before the bump, so that the other reviewers'
labels, which queue on the counter row, wait for fewer statements (bench.web --lock-waits
found 36 ms of waiting per write when five reviewers wrote at the same instant, every 3 s,
before this). They stand only if the counters are the same once
held as when they were read: every write that moves a count bumps the counters in the
transaction that makes it, so equal counters mean that no such write committed in
between. Otherwise they are read again under the lock, as they always were.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection

from evaluation.agreement import cells as sql
from evaluation.agreement.cells import Cell
from evaluation.agreement.selectors import excluded_of, kept_state, label_days, run_method
from evaluation.kept import events
from evaluation.kept import figures as kept_figures
from evaluation.kept.counters import Counters, counters
from evaluation.kept.events import Moved
from evaluation.kept.readers import AGREEMENT
from evaluation.models import HumanLabel, KeptFigure, Run

Row = list  # a kept cell: [figure, value, other, first, second, n]


@contextmanager
def item_change(*, answer_id: int, criterion_id: int, label: bool) -> Iterator[Moved | None]:
    """Wrap the write of one item's label (`label`) or adjudication: the dataset's review
    counters move with it (the one bump of every label and adjudication write), and inside
    a transaction the kept agreement counts of its dataset move with it too. Yields the
    bump inside a transaction, for the other kept figures to follow (review.moves); None
    outside one, where the bump comes after the write."""
    dataset_id, event = events.answer_item(answer_id, adjudication=not label)
    if not connection.in_atomic_block:
        yield None
        events.bump(dataset_id, event)
        return
    item = (answer_id, criterion_id)
    seen = counters(dataset_id)
    early = {_pk(run): _item(dataset_id, run, *item) for run, _ in _kept(dataset_id, seen).values()}
    moved = events.bump(dataset_id, event)  # locks the dataset's counter row until commit
    if moved is None:  # the dataset is being deleted: nothing is kept for it
        yield None
        return
    at = events.before(moved, event)
    if at != seen:  # a write committed between: its change may or may not be in `early`
        early = {}
    kept = _kept(dataset_id, at)
    before = {}
    for key, (run, _) in kept.items():
        counted = early.get(_pk(run))
        before[key] = counted if counted is not None else _item(dataset_id, run, *item)
    yield Moved(dataset_id, event, moved)
    for key, (run, rows) in kept.items():
        after = _item(dataset_id, run, *item)
        counts = apply(rows, minus=before[key], plus=after)
        if counts is not None:
            kept_figures.store(kept_state(dataset_id, run, at=moved), counts)


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


def _kept(dataset_id: int, at: Counters) -> dict[str, tuple[Run | None, list[Row]]]:
    """The agreement counts kept for the dataset at the counters `at`, by key, with the run
    each was counted for (None: without a run): only those kept for the run's current
    state (two queries)."""
    stored = KeptFigure.objects.filter(
        dataset_id=dataset_id, kind=AGREEMENT.kind, revision=at.number
    ).values_list("key", "run_id", "cells")
    rows = list(stored)
    run_ids = {run_id for _, run_id, _ in rows if run_id is not None}
    runs = {r.pk: r for r in Run.objects.filter(pk__in=run_ids, dataset_id=dataset_id)}
    found = {}
    for key, run_id, cells in rows:
        run = runs.get(run_id)
        if run_id is not None and run is None:
            continue
        state = kept_state(dataset_id, run, at=at)
        if state.cacheable and state.key == key:
            found[key] = (run, cells)
    return found


def _pk(run: Run | None) -> int | None:
    return run.pk if run is not None else None


def _item(dataset_id: int, run: Run | None, answer_id: int, criterion_id: int) -> list[Cell]:
    method, threshold = run_method(run)
    found = sql.item_cells(
        dataset_id, run.pk if run else None, method=method, threshold=threshold,
        answer_id=answer_id, criterion_id=criterion_id, excluded=excluded_of(run),
    )  # fmt: skip
    labels = HumanLabel.objects.filter(answer_id=answer_id, criterion_id=criterion_id)
    return found + label_days(labels)
