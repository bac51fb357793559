"""The agreement counts kept between requests (KeptFigure rows of kind "agreement"): the
state they are kept under (`kept_state`), and `cells`, which reads them or counts them
afresh and keeps them under the slot's fill lock. A label or adjudication moves them by its
delta (evaluation.agreement.delta) instead of leaving them to be counted again.

The agreement selectors read through `cells`; this module is where those counts are
written, so that the selectors only read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import astuple

from django.db import transaction
from django.db.models import Count, QuerySet
from django.db.models.functions import TruncDate

from annotation.models import Dataset
from evaluation.agreement import cells as sql
from evaluation.agreement.cells import Cell
from evaluation.judges.tuning import excluded_items
from evaluation.kept import cold, counters, readers
from evaluation.kept import figures as kept_figures
from evaluation.kept.counters import Counters
from evaluation.labels.models import HumanLabel
from evaluation.metrics.aggregation import Method
from evaluation.runs.models import Run


def default_run(
    dataset_id: int, finished: list[Run], labelled: list[int], choose: Callable[[], Run]
) -> Run:
    """The run `choose()` picks among the `finished` runs for the `labelled` answers (their
    ids, in order), as kept when the same runs, in the same states, were chosen among for
    the same answers; else chosen now and kept. What it saves: `choose` probes each
    labelled answer's verdicts in a run (95 ms at a month of nightly runs), and every
    request of the agreement pages asks which run they open on."""
    runs = sorted(finished, key=lambda r: r.pk)
    answers = hashlib.sha256(",".join(map(str, labelled)).encode()).hexdigest()
    state = readers.state(
        dataset_id, readers.AGREEMENT_DEFAULT_RUN, runs=runs, facts=[f"labelled:{answers}"]
    )
    by_pk = {r.pk: r for r in runs}  # the kept pk is one of them: the runs are in its state
    return by_pk[kept_figures.remembered(state, lambda: choose().pk)]


def run_method(run: Run | None) -> tuple[str, float]:
    """How the run's votes become one verdict (without a run: majority)."""
    return (run.panel_method, run.panel_threshold) if run else (Method.MAJORITY, 0.5)


def kept_state(dataset_id: int, run: Run | None, at: Counters | None = None) -> readers.State:
    """What the cells are kept under: the dataset's review revision (at its counters now,
    or `at`), the run, its method, and what changes its verdicts (status, attempt, finish
    time), and the items it leaves out (only when there are: the keys of runs without stay
    what they were). Not cacheable while the run may still be writing verdicts: then the
    cells are counted afresh on every request."""
    left_out = excluded_of(run)
    facts = [f"excluded:{left_out}"] if left_out else []
    return readers.state(dataset_id, readers.AGREEMENT, run=run, at=at, facts=facts)


def excluded_of(run: Run | None) -> tuple[tuple[int, int], ...]:
    """The items the run's figures leave out: those its judges were shown as examples."""
    return tuple(sorted(excluded_items(run))) if run is not None else ()


# The refresh group that counts a run's agreement cells in the background (kept.refresh);
# without a run (labels and imported verdicts alone), the dataset's group of that name.
REFRESH_GROUP = "agreement"


def cells(dataset: Dataset, run: Run | None) -> list[Cell] | None:
    """The counted cells, as kept when nothing they depend on has changed since they were
    counted; else counted now (evaluation.agreement.cells) and kept. None: cold, and
    counted in the background (evaluation.kept.cold; the run's refresh, or without a run
    the dataset's): the page says "computing"."""
    state = kept_state(dataset.pk, run)
    stored = kept_figures.kept(state) if state.cacheable else None
    if stored is not None:
        return [Cell(*row) for row in stored]
    if state.cacheable:
        decided = cold.fill(
            dataset.pk, run.pk if run is not None else None, REFRESH_GROUP,
            read_only=kept_figures.writes_refused(),
        )  # fmt: skip
        if decided is cold.Cold.QUEUED:
            return None
    return keep_cells(dataset, run, state)


def keep_cells(dataset: Dataset, run: Run | None, state: readers.State | None = None) -> list[Cell]:
    """The cells kept for the current state (`state`, when the caller read it), counted and
    kept first when they are not: the refresh task's work, and a reader's where the cold
    rule lets it count."""
    method, threshold = run_method(run)
    if state is None:
        state = kept_state(dataset.pk, run)
        if state.cacheable and (stored := kept_figures.kept(state)) is not None:
            return [Cell(*row) for row in stored]
    if not state.cacheable:
        return counted_cells(dataset, run, method, threshold)
    if kept_figures.writes_refused():  # a read-only snapshot: counted, nothing kept or held
        return counted_cells(dataset, run, method, threshold)
    with transaction.atomic():
        # One counter at a time per slot, and no label committing while it counts: the
        # cells it keeps are at the current counters, so the next label moves them by its
        # delta (agreement.delta). Without both, a count that outlasts the gap between two
        # labels (seconds at 200,000 items) keeps cells that are behind, and every later
        # reader counts again, several at once (seen: four 12-second counts in parallel).
        kept_figures.fill_lock(state)
        state = kept_state(dataset.pk, run, at=counters.held(dataset.pk))
        stored = kept_figures.kept(state)
        if stored is not None:  # kept by another reader while this one waited
            return [Cell(*row) for row in stored]
        rows = counted_cells(dataset, run, method, threshold)
        kept_figures.store(state, [list(astuple(c)) for c in rows])
    return rows


def counted_cells(dataset: Dataset, run: Run | None, method: str, threshold) -> list[Cell]:
    rows = sql.cells(
        dataset.pk, run.pk if run else None, method=method, threshold=threshold,
        excluded=excluded_of(run),
    )  # fmt: skip
    return rows + dataset_label_days(dataset)


def dataset_label_days(dataset: Dataset) -> list[Cell]:
    """Labels per rater and day, as cells ("day", rater, ISO date): kept with the figures."""
    return label_days(HumanLabel.objects.filter(answer__query__dataset=dataset))


def label_days(labels: QuerySet[HumanLabel]) -> list[Cell]:
    """The labels' "day" cells: how many each rater made on each day."""
    # Days in the server's time zone (TruncDate uses the current one, as localdate does).
    per_day = (
        labels.annotate(day=TruncDate("created_at"))
        .values_list("rater", "day")
        .annotate(n=Count("pk"))
        .order_by()
    )
    return [Cell("day", rater, day.isoformat(), None, None, n) for rater, day, n in per_day]
