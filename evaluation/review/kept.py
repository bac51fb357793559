"""Review queues kept in order between requests (issue 14): the ordered items of a queue, at
one state, as KeptQueueRow rows under a KeptFigure row (the header) kept for that state.

A queue page then reads one page of rows by position (an index range), its count from the
header, and its filters as conditions on the rows: nothing proportional to the queue's
length happens on a request once the order is kept. The order is computed again when its
state changes (a label, an adjudication, a run), by the first reader.

Never stale: the header's key is the hash of everything the order depends on
(`evaluation.kept.readers.State`), so a changed state is a different key and is never
answered by the old rows; keeping a new state deletes the headers and rows of every other
state in the queue's slot in the same transaction, and rows left by headers deleted another
way (a dataset deleted, the figures emptied). The header and its rows commit together: a
reader sees both or neither. A reader that found a header just before a writer replaced it
reads no rows for it (an empty page, once): the old order is gone, never shown as if
current.

The selectors read the queues; the rows are written here: `write_labelling` and
`write_disagreements` fill a header's rows, and `answer_uncertainties` keeps each answer's
uncertainty, derived from the runs' vote splits (`vote_histogram`). A label moves a kept
order itself (review.moves).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Q

from evaluation.answers.models import Answer
from evaluation.kept import counters, readers
from evaluation.kept import figures as kept_figures
from evaluation.kept.cold import Cold
from evaluation.kept.models import KeptFigure, KeptQueueRow
from evaluation.kept.readers import Basis, State
from evaluation.review import disagreement_sql, order

if TYPE_CHECKING:
    from evaluation.review.queues import AnswerFacts
    from evaluation.runs.models import Run


def latest(basis: Basis) -> KeptFigure | None:
    """The order kept in the queue's slot if it was ordered from the same `basis` (the runs
    and the policy: everything but the review counters), whatever labels and adjudications
    came since; None otherwise. For moving on to the next item (`filters.next_item`):
    after each label the kept order is one label old, and ordering the queue again before
    every "next" would make a reviewer wait for a recount at every item. The items it
    gives are still checked live (done by the reader, adjudicated)."""
    header = kept_figures.slot(basis).order_by("-pk").first()
    if header is None or header.cells.get("base") != basis.digest:
        return None
    return header


def _newer(state: State) -> KeptFigure | None:
    """The order kept in the slot for the same basis at counters at least as new as
    `state`'s, if any: a label committed between this reader's read of the counters and
    its look-up moved the order past them (review.moves). Serving it is serving the
    current order; filling one at the older counters would throw the moved one away."""
    for header in kept_figures.slot(state).order_by("-pk")[:3]:
        counters = header.cells.get("counters")
        if header.cells.get("base") != state.basis.digest or counters is None:
            continue
        if all(new >= old for new, old in zip(counters, state.counters, strict=True)):
            return header
    return None


def newest(basis: Basis) -> KeptFigure | None:
    """The newest order kept in the queue's slot, whatever it was ordered from: what a
    reader is served, marked updating, while the order of the current state is computed in
    the background (evaluation.kept.cold). Its rows stay until that order is kept."""
    return kept_figures.slot(basis).order_by("-pk").first()


def kept(
    state: State,
    fill: Callable[[int], dict],
    cold: Callable[[], Cold] | None = None,
    prepare: Callable[[], None] | None = None,
) -> KeptFigure | None:
    """The header of the queue kept for `state`, filling it first when it is not kept yet:
    `fill(header_id)` writes the rows and returns the header's figures (total, adjudicated).
    `cold`: the rule for a cacheable order not kept yet (evaluation.kept.cold.fill); None
    when it says the order is counted in the background (QUEUED), not here. `prepare()`:
    what the fill reads that labels do not move, counted in the fill's transaction before
    it holds the review counters (`count_judged`), so that labels wait only for the rest.

    An order that may change without its state moving (a running run's verdicts arrive
    without a new status) is not cacheable: it is computed for this request under a key of
    its own, and replaced by the next such request in the same slot."""
    base = state.basis.digest
    if not state.cacheable:
        live = f"{state.basis.text}|live:{uuid.uuid4().hex}"
        state = replace(state, basis=replace(state.basis, text=live))
    found = KeptFigure.objects.filter(dataset_id=state.dataset_id, key=state.key).first()
    if found is None and state.cacheable:
        found = _newer(state)
    if found is not None:
        return found
    if state.cacheable and cold is not None:
        decided = cold()
        if decided is Cold.QUEUED:
            return None
        if decided is Cold.KEPT:  # the refresh ran inside (eager Celery)
            state = readers.state_of(state.basis)
            found = KeptFigure.objects.filter(dataset_id=state.dataset_id, key=state.key).first()
            if found is not None:
                return found
    with transaction.atomic():
        if prepare is not None:
            prepare()
        # One filler at a time per slot, and no label committing while it fills: the order
        # it keeps is at the current counters, so the next label moves it (review.moves).
        # Without both, a fill that outlasts the gap between two labels keeps an order
        # that is behind, every later reader fills again, and the fills pile up.
        kept_figures.fill_lock(state)
        if state.cacheable:
            state = readers.state_of(state.basis, counters.held(state.dataset_id))
        found = KeptFigure.objects.filter(dataset_id=state.dataset_id, key=state.key).first()
        if found is not None:  # kept by another reader while this one waited
            return found
        stale = kept_figures.slot(state).exclude(key=state.key)
        KeptQueueRow.objects.filter(
            Q(kept_id__in=stale.values("pk")) | ~Q(kept_id__in=KeptFigure.objects.values("pk"))
        ).delete()
        stale.delete()
        try:
            with transaction.atomic():
                header = kept_figures.row(state, {})
                header.save()
        except IntegrityError:
            # A concurrent reader computing the same state: this one waited on the unique
            # key until the other committed, and reads its rows instead of writing them.
            return KeptFigure.objects.get(dataset_id=state.dataset_id, key=state.key)
        header.cells = {**fill(header.pk), "base": base, "counters": list(state.counters)}
        if state.cacheable:  # what a label's move re-keys it from (review.moves)
            header.cells["basis"] = state.basis.text
        header.save(update_fields=["cells"])
    return header


def write_labelling(
    header_id: int, drawn: list[AnswerFacts], chosen: dict[int, Run], systems: list[int]
) -> dict:
    """Write the labelling queue's rows under the header, in the policy's draw order
    (`drawn`, review.selectors._labelling_order), each keyed by its labels and its draw rank
    (review.order), with the run whose verdicts count for its answer (`chosen`); return the
    header's figures."""
    KeptQueueRow.objects.bulk_create(
        (
            KeptQueueRow(
                kept_id=header_id, sort_key=order.labelling_key(f.labels, n),
                answer_id=f.answer_id, labels=f.labels, uncertainty=f.uncertainty,
                run_id=chosen[f.answer_id].pk if f.answer_id in chosen else None,
            )
            for n, f in enumerate(drawn)
        ),
        batch_size=2000,
    )  # fmt: skip
    return {"total": len(drawn), "adjudicated": 0, "systems": systems}


# The judges' side of the disagreement queue, counted before its fill holds the review
# counters (PostgreSQL): a temporary table, gone when the fill's transaction ends.
JUDGED = "review_judged_items"


def disagreement_fill(
    dataset_id: int, ranked: list[Run]
) -> tuple[Callable[[], None] | None, Callable[[int], dict]]:
    """(prepare, fill) for `kept`: on PostgreSQL the judges' votes are counted first
    (`count_judged`), outside the hold on the review counters that the fill takes. Over
    30 nightly runs of 720,000 verdicts that count is seconds, and every label waited for
    it (a label POST of 5.5–7.3 s in the first loads after a seed, docs/benchmarks.md).
    Elsewhere (SQLite serialises writers anyway) the fill counts everything in one statement."""
    if connection.vendor != "postgresql":
        return None, lambda header_id: write_disagreements(dataset_id, ranked, header_id)
    return (
        lambda: count_judged(ranked),
        lambda header_id: write_disagreements(dataset_id, ranked, header_id, judged=JUDGED),
    )


def count_judged(ranked: list[Run]) -> None:
    """The judges' side of every item of the ranked runs into the temporary table JUDGED
    (disagreement_sql.judged_sql), for the fill of the same transaction to read. Votes of
    ended runs never move; a running run's queue is made for one request (not cacheable)."""
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {JUDGED}")  # a fill before, in one transaction
        cursor.execute(
            f"CREATE TEMPORARY TABLE {JUDGED} ON COMMIT DROP AS "
            f"{disagreement_sql.judged_sql(ranked)}"
        )


def write_disagreements(
    dataset_id: int, ranked: list[Run], header_id: int, *, judged: str | None = None
) -> dict:
    """Count the disagreement queue and write it with its sort keys in the database (one
    statement; the judges' side read from the table `judged` when `count_judged` filled
    it), then count its open and adjudicated items for the header."""
    columns = ", ".join(disagreement_sql.ROW_FIELDS)
    facts = disagreement_sql.facts_sql(ranked, one_item=False, judged=judged)
    sql = (
        f"{facts} INSERT INTO evaluation_keptqueuerow "
        f"(kept_id, {columns}) SELECT %(header)s, {disagreement_sql.QUEUED}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, {"dataset": dataset_id, "header": header_id})
    counted = dict(
        KeptQueueRow.objects.filter(kept_id=header_id)
        .values_list("adjudicated")
        .annotate(n=Count("pk"))
        .order_by()
    )
    systems = Answer.objects.filter(query__dataset_id=dataset_id).values_list(
        "system_id", flat=True
    )
    return {
        "total": counted.get(False, 0),
        "adjudicated": counted.get(True, 0),
        "systems": sorted(systems.distinct().order_by()),
        "runs": [r.pk for r in ranked],
    }


_HISTOGRAM_SQL = """
SELECT run_id, answer_id, p, f, count(*) FROM (
  SELECT v.run_id, v.answer_id, v.criterion_id,
         sum(CASE WHEN v.outcome = 'pass' THEN 1 ELSE 0 END) AS p,
         sum(CASE WHEN v.outcome = 'fail' THEN 1 ELSE 0 END) AS f
  FROM evaluation_verdict v WHERE v.run_id IN ({runs})
  GROUP BY v.run_id, v.answer_id, v.criterion_id
) item GROUP BY run_id, answer_id, p, f
"""


def vote_histogram(runs: list[Run]) -> list[list[int]]:
    """(run, answer, passes, fails, criteria) rows: how many criteria of each answer got each
    split of valid votes in each run, counted in the database (what `answer_uncertainties`
    is derived from)."""
    if not runs:
        return []
    placeholders = ", ".join(["%s"] * len(runs))
    with connection.cursor() as cursor:
        cursor.execute(_HISTOGRAM_SQL.format(runs=placeholders), [r.pk for r in runs])
        return [[int(v) for v in row] for row in cursor.fetchall()]


def answer_uncertainties(
    dataset_id: int, runs: list[Run], part: str, derive: Callable[[], list[list]]
) -> list[list]:
    """Each graded answer's row of the labelling queue's uncertainty (`derive`d from the
    runs' vote histogram by the selectors), kept while the runs have ended and not moved
    (their verdicts change only when a run is resumed, retried or imported again, which
    moves its status, attempt or finish time). Kept per answer rather than as the
    histogram: one row per answer to read where the histogram has one per split (30 runs
    at the month preset: 6,000 rows against 180,000, 3.7 s of JSON and Python each time
    the labelling queue or the analytics' sampling design read it). `part`: the slot, one
    per set of runs read by default (system answers, perfect answers), so that reading
    both queues does not replace one kept row set with the other."""
    if not runs:
        return []
    ordered = sorted(runs, key=lambda r: r.pk)
    state = readers.state(dataset_id, readers.QUEUE_UNCERTAINTY, runs=ordered, part=part)
    if not state.cacheable:
        return derive()
    return kept_figures.remembered(state, derive)
