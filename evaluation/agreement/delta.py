"""One label's or adjudication's change, applied to the kept agreement counts.

Every agreement count is a sum over items (`cells.item_cells`), so when one item changes,
the counts kept for revision R become the counts for the next revision by taking away the
item's own counts before the change and adding them after it: a few index look-ups, where
a recount reads every labelled item (4 s at 200,000 items on a quiet two-core machine). The
agreement page and API then stay warm while reviewers label, instead of the first reader
after every label paying the recount.

The writer (`evaluation.review.services._item_written`, the one path of every label and
adjudication write) calls the three steps in order: `count_early`, then its bump of the
dataset's review counters, `counts_before`, its write, and `apply_after`.

Why it stays right: the change runs inside the writer's transaction, and its write comes
after the bump of the dataset's review counters (`evaluation.kept.events.bump`), which locks
the counter row until the transaction ends. No other writer's bump, and so no other label or
adjudication, can commit between the counts read here and the ones stored, and readers see
either the old revision with the old counts or the new revision with the new ones. Only
counts kept under the revision before the bump are used (what a reader kept under an older
number may include later labels: see `evaluation.agreement.kept.cells`).

The item's counts before the write are read before the bump, so that the other reviewers'
labels, which queue on the counter row, wait for fewer statements (bench.web --lock-waits
found 36 ms of waiting per write when five reviewers wrote at the same instant, every 3 s,
before this). They stand only if the counters are the same once
held as when they were read: every write that moves a count bumps the counters in the
transaction that makes it, so equal counters mean that no such write committed in
between. Otherwise they are read again under the lock, as they always were.
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluation.agreement import cells as sql
from evaluation.agreement.cells import Cell
from evaluation.agreement.kept import excluded_of, kept_state, label_days, run_method
from evaluation.kept import figures as kept_figures
from evaluation.kept.counters import Counters, counters
from evaluation.kept.events import Moved
from evaluation.kept.models import KeptFigure
from evaluation.kept.readers import AGREEMENT
from evaluation.labels.models import HumanLabel
from evaluation.runs.models import Run

Row = list  # a kept cell: [figure, value, other, first, second, n]


@dataclass(frozen=True)
class Early:
    """The item's agreement counts read before the bump, without its lock (`count_early`),
    with the counters they were read at."""

    dataset_id: int
    item: tuple[int, int]  # (answer id, criterion id)
    seen: Counters
    counted: dict[int | None, list[Cell]]  # by run id (None: without a run)


@dataclass(frozen=True)
class Pending:
    """The kept agreement counts a write moves (`counts_before`), each with the item's
    counts before the write; `apply_after` moves them once it is written."""

    dataset_id: int
    item: tuple[int, int]
    after: Counters  # the counters after the bump: what the moved counts are kept under
    kept: dict[str, tuple[Run | None, list[Row]]]
    before: dict[str, list[Cell]]


def count_early(dataset_id: int, *, answer_id: int, criterion_id: int) -> Early:
    """Before the bump: the item's counts for each run whose agreement counts are kept at
    the dataset's counters now. Counted before the lock so that other writers, who queue
    on the counter row, wait for fewer statements; `counts_before` keeps them only if no
    write committed in between."""
    item = (answer_id, criterion_id)
    seen = counters(dataset_id)
    counted = {
        _pk(run): _item(dataset_id, run, *item) for run, _ in _kept(dataset_id, seen).values()
    }
    return Early(dataset_id, item, seen, counted)


def counts_before(early: Early, moved: Moved) -> Pending:
    """After the bump (`moved`), before the write: the counts kept at the counters before
    the bump, and the item's counts in each, taken from `early` when the counters are the
    ones it read (no write committed between), else counted again under the lock."""
    at = moved.before
    counted = early.counted if at == early.seen else {}
    kept = _kept(early.dataset_id, at)
    before = {}
    for key, (run, _) in kept.items():
        found = counted.get(_pk(run))
        before[key] = found if found is not None else _item(early.dataset_id, run, *early.item)
    return Pending(early.dataset_id, early.item, moved.after, kept, before)


def apply_after(pending: Pending) -> None:
    """After the write: each kept count less the item's counts before it, plus its counts
    now, kept under the counters after the bump (a count that would fall below zero is
    left for a recount)."""
    for key, (run, rows) in pending.kept.items():
        after = _item(pending.dataset_id, run, *pending.item)
        counts = apply(rows, minus=pending.before[key], plus=after)
        if counts is not None:
            kept_figures.store(kept_state(pending.dataset_id, run, at=pending.after), counts)


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
