"""Reads of the review: the queues of a dataset and the rows of the review page.

Which verdicts stand for "the judges" on an answer: those of the run the reviewer chose
(?run=), or else the latest done run that graded the answer (latest by finish time, then
id). Each run is aggregated with its own panel's method (evaluation.metrics.aggregation), so
unparseable and errored votes are shown but never counted.

Every function here runs a fixed number of queries, whatever the size of the dataset.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db.models import Count, Exists, OuterRef, QuerySet
from guardian.shortcuts import get_users_with_perms

from annotation import roles
from annotation.models import Checklist, Criterion, Dataset
from evaluation.answers.models import Answer
from evaluation.kept import cold, readers, refresh
from evaluation.kept import figures as kept_figures
from evaluation.kept.models import KeptQueueRow
from evaluation.labels.models import HumanLabel, ReviewAssignment
from evaluation.metrics.aggregation import CriterionVerdict, Vote, aggregate
from evaluation.review import kept, queues, sampling
from evaluation.runs.models import Run, Verdict

if TYPE_CHECKING:
    from annotation.access import AnyUser
    from evaluation.kept.models import KeptFigure

LABELLING = ReviewAssignment.Queue.LABELLING
DISAGREEMENT = ReviewAssignment.Queue.DISAGREEMENT
DONE = Run.Status.DONE
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
# The random and least-certain label policies offer at least this many answers (every
# answer of a smaller dataset), whatever their share: a fifth of 14 answers is 3, too few
# for a reviewer's first session to say anything about the judges (a kappa on 20 criteria
# spans most of its range). Twenty answers of five to ten criteria give 100–200 labelled
# criteria, enough for a first agreement figure with an interval worth reading. The floor
# goes on down the policy's own draw (queues.drawn), so PPI++ weighs the labels the same.
LABEL_FLOOR = 20


def reviewable_criteria(**filters: object):
    # Archived criteria keep their labels but take no new ones (annotation.models.Criterion).
    return Criterion.objects.active().filter(
        checklist__status=Checklist.Status.SUBMITTED, scoring_enabled=True, **filters
    )


def latest_run(runs: list[Run]) -> Run | None:
    done = [r for r in runs if r.status == Run.Status.DONE]
    return max(done, key=lambda r: (r.finished_at or _EPOCH, r.pk), default=None)


def runs_by_answer(dataset: Dataset, run: Run | None = None) -> dict[int, Run]:
    """For each answer of the dataset that has verdicts: the run whose verdicts count."""
    pairs = Verdict.objects.filter(run__dataset=dataset)
    if run is not None:
        pairs = pairs.filter(run=run)
        return {a: run for a in pairs.values_list("answer_id", flat=True).distinct()}
    pairs = pairs.filter(run__status=Run.Status.DONE)
    runs = {r.pk: r for r in Run.objects.filter(dataset=dataset, status=Run.Status.DONE)}
    graded: dict[int, list[Run]] = defaultdict(list)
    for answer_id, run_id in pairs.values_list("answer_id", "run_id").distinct():
        graded[answer_id].append(runs[run_id])
    return {a: latest for a, rs in graded.items() if (latest := latest_run(rs)) is not None}


def _verdicts(chosen: dict[int, Run]) -> dict[tuple[int, int], CriterionVerdict]:
    """The aggregated verdict of every (answer, criterion) judged in the chosen runs."""
    if not chosen:
        return {}
    run_ids = sorted({r.pk for r in chosen.values()})
    runs = {r.pk: r for r in Run.objects.filter(pk__in=run_ids).select_related("panel")}
    votes: dict[tuple[int, int], list[Vote]] = defaultdict(list)
    # Filtered by run only (a handful of ids), not by answer: an IN list of every answer of
    # a big dataset would be slower than skipping the few rows of other answers here.
    rows = Verdict.objects.filter(run__in=run_ids).values_list(
        "run_id", "answer_id", "criterion_id", "judge_id", "sample", "outcome"
    )
    for run_id, answer_id, criterion_id, judge_id, sample, outcome in rows.iterator():
        counted = chosen.get(answer_id)
        if counted is not None and counted.pk == run_id:
            votes[answer_id, criterion_id].append(Vote(str(judge_id), sample, outcome))
    verdicts = {}
    for (answer_id, criterion_id), answer_votes in votes.items():
        run = runs[chosen[answer_id].pk]
        verdicts[answer_id, criterion_id] = aggregate(
            answer_votes, run.panel_method, threshold=run.panel_threshold
        )
    return verdicts


def labelling_runs(dataset: Dataset, *, perfect: bool = False) -> list[Run]:
    """The finished runs whose verdicts the labelling queue reads by default: those of
    system answers (and imported verdicts), or with `perfect` the cross-evaluation runs,
    the only ones that grade perfect answers. Kept apart so that a cross-evaluation
    ending does not order the system answers' queue again."""
    # An archived run's verdicts are in its Parquet file, not the table (evaluation.archive).
    runs = Run.objects.filter(dataset=dataset, status=DONE, archived_at=None)
    cross = Run.Kind.CROSS_EVALUATION
    return list(runs.filter(kind=cross) if perfect else runs.exclude(kind=cross))


def _uncertainties(
    dataset: Dataset, run: Run | None, *, perfect: bool = False
) -> tuple[dict[int, Run], dict[int, float | None], dict[int, int]]:
    """For each graded answer: the run whose verdicts count (as runs_by_answer, among the
    runs of system answers, or of perfect answers with `perfect`), the judges' uncertainty
    on it (the mean over its judged criteria of 1 - |2 · pass share - 1|, from counted
    splits) and how many of its criteria got a valid vote. Kept while the runs have ended
    and not moved (kept.answer_uncertainties): one row per answer to read."""
    runs = [run] if run is not None else labelling_runs(dataset, perfect=perfect)
    by_pk = {r.pk: r for r in runs}
    part = "perfect" if perfect and run is None else ""
    rows = kept.answer_uncertainties(
        dataset.pk, runs, part, lambda: _answer_uncertainties(by_pk, run)
    )
    chosen = {answer_id: by_pk[run_id] for answer_id, run_id, _, _ in rows}
    uncertainty = {answer_id: u for answer_id, _, u, judged in rows if judged}
    judged = {answer_id: n for answer_id, _, _, n in rows if n}
    return chosen, uncertainty, judged


def _answer_uncertainties(by_pk: dict[int, Run], run: Run | None) -> list[list]:
    """[answer, run whose verdicts count, uncertainty or None, criteria with a valid vote]
    per graded answer, from the vote splits of the runs `by_pk` (kept.vote_histogram)."""
    rows = kept.vote_histogram(list(by_pk.values()))
    graded: dict[int, list[Run]] = defaultdict(list)
    for run_id, answer_id, *_ in rows:
        if not graded[answer_id] or graded[answer_id][-1].pk != run_id:
            graded[answer_id].append(by_pk[run_id])
    if run is not None:
        chosen = {a: run for a in graded}
    else:
        chosen = {a: latest for a, rs in graded.items() if (latest := latest_run(rs)) is not None}
    totals: dict[int, list[float]] = defaultdict(lambda: [0.0, 0])
    for run_id, answer_id, p, f, n in rows:
        counted = chosen.get(answer_id)
        if counted is None or counted.pk != run_id or p + f == 0:
            continue
        total = totals[answer_id]
        total[0] += n * (1 - abs(2 * (p / (p + f)) - 1))
        total[1] += n
    return [
        [a, r.pk, totals[a][0] / totals[a][1], int(totals[a][1])]
        if a in totals
        else [a, r.pk, None, 0]
        for a, r in chosen.items()
    ]


def dataset_reviewers(dataset: Dataset) -> list:
    """Users who may review the dataset (reviewers and admins), by username."""
    users = get_users_with_perms(dataset, only_with_perms_in=[roles.REVIEW], with_superusers=False)
    return sorted(users, key=lambda u: u.get_username())


# --- labelling queue ------------------------------------------------------------------------


@dataclass
class LabellingItem:
    answer_id: int
    facts: queues.AnswerFacts
    mine: int  # criteria the current user has labelled
    assignment: ReviewAssignment | None
    run: Run | None
    url: str = ""  # the review page, set by the view
    answer: Answer | None = None  # loaded for the items shown (load_answers)

    @property
    def key(self) -> tuple[int, ...]:
        return (self.answer_id,)

    @property
    def done_by_me(self) -> bool:
        return self.facts.criteria > 0 and self.mine >= self.facts.criteria


def load_answers(items) -> None:
    """Fill `answer` (with its system and query), and `criterion` of disagreement items, of
    the queue items about to be shown: two queries for a page, not one object per item."""
    wanted = {i.key[0] for i in items if i.answer is None}
    found = Answer.objects.filter(pk__in=wanted).select_related("system", "query").in_bulk()
    criteria = (
        Criterion.objects.filter(pk__in={i.key[1] for i in items if len(i.key) > 1})
        .select_related("checklist__author")
        .in_bulk()
    )
    for item in items:
        if item.answer is None:
            item.answer = found.get(item.key[0])
        if len(item.key) > 1:
            item.criterion = criteria.get(item.key[1])


@dataclass(frozen=True)
class ColdOrder:
    """A queue whose order for the current state is not kept yet, counted in the background
    (evaluation.kept.cold): `computing` when no earlier order is served either (the
    placeholder: an empty queue), else the earlier order is served, updating; `failure`
    when the last refresh failed and waits out its back-off."""

    computing: bool
    failure: refresh.Failure | None = None
    computed_at: dt.datetime | None = None  # when the earlier order served was


class KeptQueue(Sequence):
    """A queue's items in order, read from its kept rows (evaluation.review.kept) a slice at
    a time: `len()` is the kept total (a count only when filtered), a slice is one indexed
    `ORDER BY sort_key LIMIT/OFFSET` read, and its items are made with the few per-page
    facts that change without the order changing (assignments, the reader's own labels).
    `cold`: not None while the order served is an earlier state's, or none (cold rule)."""

    def __init__(
        self, rows: QuerySet[KeptQueueRow], make: Callable[[list[KeptQueueRow]], list],
        total: int | None, systems: list[int] | None = None, cold: ColdOrder | None = None,
    ) -> None:  # fmt: skip
        # `total`: kept with the order for the whole queue; None for a filtered one.
        self.rows, self.make, self.total = rows.order_by("sort_key"), make, total
        # The systems that answered in the dataset, kept with the order (filter_choices).
        self.systems = systems
        self.cold = cold

    @property
    def updating(self) -> bool:
        return self.cold is not None

    def narrowed(self, rows: QuerySet[KeptQueueRow]) -> KeptQueue:
        """The same queue with fewer rows (filters): counted when asked."""
        return KeptQueue(rows, self.make, None, self.systems, self.cold)

    def __len__(self) -> int:
        if self.total is None:
            self.total = self.rows.count()
        return self.total

    def __getitem__(self, index):
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                raise ValueError("A queue is read in order: no step.")
            return self.make(list(self.rows[start:stop])) if start < stop else []
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self.make(list(self.rows[index : index + 1]))[0]

    def place(self, sort_key: str) -> int:
        """1-based: where the row of `sort_key` stands in this (filtered) queue, counted
        over the index up to it."""
        return self.rows.filter(sort_key__lte=sort_key).count()

    def __iter__(self):
        yield from self[0 : len(self)]


def _run_map(dataset: Dataset, run: Run | None) -> tuple[list[Run], dict[int, Run]]:
    found = Run.objects.filter(dataset=dataset, status=DONE, archived_at=None)
    runs = [run] if run is not None else list(found)
    return runs, {r.pk: r for r in runs}


def refresh_group(figure: readers.Figure, run: Run | None, *, perfect: bool = False) -> str:
    """The dataset's refresh group that orders a queue in the background (evaluation.kept.
    cold): "labelling-queue", "labelling-queue.perfect", "disagreement-queue.run-12"...
    (`queue_of_group` reads it back)."""
    return figure.kind + (".perfect" if perfect else "") + (f".run-{run.pk}" if run else "")


def queue_of_group(group: str) -> tuple[str, bool, int | None] | None:
    """(queue kind, perfect, run id) of a queue's refresh group; None for another group."""
    kind, *rest = group.split(".")
    if kind not in (readers.LABELLING_QUEUE.kind, readers.DISAGREEMENT_QUEUE.kind):
        return None
    run_id = next((int(r.removeprefix("run-")) for r in rest if r.startswith("run-")), None)
    return kind, "perfect" in rest, run_id


def _kept_header(
    dataset: Dataset, run: Run | None, runs: list[Run], *, figure: readers.Figure,
    facts: tuple[object, ...], fill: Callable[[int], dict], recent: bool, part: str = "",
    group: str, prepare: Callable[[], None] | None = None,
) -> tuple[KeptFigure | None, ColdOrder | None]:  # fmt: skip
    """The kept order a queue reads (evaluation.review.kept), per queue `figure` and `run`,
    computed from `runs` (in their order) and `facts` (the policy): under `recent`, the
    latest one kept for the same runs and facts will do; else the one of the current review
    counters, `fill`ed when missing, unless the cold rule sends the fill to the background
    (the dataset's refresh `group`): then the newest order kept in the slot, marked
    updating, or None (the placeholder). With a run still going, the order is made for
    this request alone (not cacheable: verdicts arrive without the runs' state moving).
    `prepare`: counted before the fill holds the review counters (kept.kept)."""
    basis = readers.basis(dataset.pk, figure, run=run, runs=runs, facts=facts, part=part)
    header = kept.latest(basis) if recent and basis.cacheable else None
    if header is not None:
        return header, None

    def rule() -> cold.Cold:
        read_only = kept_figures.writes_refused()
        return cold.fill(dataset.pk, None, group, read_only=read_only)

    header = kept.kept(readers.state_of(basis), fill, rule, prepare)
    if header is not None:
        return header, None
    earlier = kept.newest(basis)
    failure = refresh.failure(dataset.pk, None, group)
    computed_at = earlier.computed_at if earlier is not None else None
    return earlier, ColdOrder(computing=earlier is None, failure=failure, computed_at=computed_at)


def _queue(
    header: KeptFigure | None, found: ColdOrder | None, make: Callable[[list[KeptQueueRow]], list]
) -> KeptQueue:
    """The queue read from its kept order, or the placeholder (no order kept yet)."""
    if header is None:
        return KeptQueue(KeptQueueRow.objects.none(), make, 0, None, found)
    return KeptQueue(
        KeptQueueRow.objects.filter(kept=header, adjudicated=False), make,
        header.cells["total"], header.cells.get("systems"), found,
    )  # fmt: skip


def _assigned(rows: list[KeptQueueRow], queue: str) -> dict:
    """The assignments of the shown rows: one query for a page."""
    found = ReviewAssignment.objects.filter(
        queue=queue, answer_id__in={r.answer_id for r in rows}
    ).select_related("assignee")
    return {(a.answer_id, a.criterion_id): a for a in found}


def _labelling_items(rows: list[KeptQueueRow], user: AnyUser, by_pk: dict[int, Run]) -> list:
    """Labelling items of kept rows, with the live per-answer facts of these rows only: the
    query's reviewable criteria, the reader's own labels, the assignments (three queries)."""
    if not rows:
        return []
    answers = {r.answer_id for r in rows}
    criteria = dict(
        reviewable_criteria(checklist__query__answers__in=answers)
        .values_list("checklist__query__answers")
        .annotate(n=Count("pk"))
        .order_by()
    )
    own = dict(
        HumanLabel.objects.filter(answer__in=answers, rater=user.get_username())
        .values_list("answer_id")
        .annotate(n=Count("pk"))
        .order_by()
    )
    assigned = _assigned(rows, LABELLING)
    return [
        LabellingItem(
            answer_id=r.answer_id,
            facts=queues.AnswerFacts(
                answer_id=r.answer_id, criteria=criteria.get(r.answer_id, 0),
                labels=r.labels, uncertainty=r.uncertainty,
            ),
            mine=own.get(r.answer_id, 0), assignment=assigned.get((r.answer_id, None)),
            run=by_pk.get(r.run_id) if r.run_id is not None else None,
        )
        for r in rows
    ]  # fmt: skip


def _labelling_order(
    dataset: Dataset, run: Run | None, perfect: bool
) -> tuple[list[queues.AnswerFacts], dict[int, Run], list[int]]:
    """The labelling queue in the policy's draw order (queues.drawn), the run whose verdicts
    count for each graded answer, and the systems that answered: what the kept rows are
    written from (kept.write_labelling: each row keyed by its labels and its draw rank,
    review.order, so that a label moves its answer's key alone). Once per state of the
    runs and policy: every answer's labels counted and every graded answer's uncertainty
    derived from the kept histogram. The answers are the systems' (perfect answers, which
    only cross-evaluation runs grade and no agreement figure compares, left out), or with
    `perfect` the perfect answers alone."""
    chosen, uncertainty, judged = _uncertainties(dataset, run, perfect=perfect)
    labels = HumanLabel.objects.filter(answer__query__dataset=dataset)
    all_labels = dict(labels.values_list("answer_id").annotate(n=Count("pk")).order_by())
    answers = Answer.objects.filter(query__dataset=dataset, checklist__isnull=not perfect)
    answers = answers.order_by("query_id", "system_id", "pk")
    systems: set[int] = set()
    facts = []
    for pk, system_id in answers.values_list("pk", "system_id"):
        systems.add(system_id)
        # The criteria do not order the queue; the page counts them for the answers shown.
        fact = queues.AnswerFacts(
            answer_id=pk, criteria=0, labels=all_labels.get(pk, 0),
            uncertainty=uncertainty.get(pk), judged=judged.get(pk, 0),
        )  # fmt: skip
        facts.append(fact)
    drawn = queues.drawn(
        facts, policy=dataset.label_policy, share=dataset.label_share, dataset_id=dataset.pk,
        at_least=LABEL_FLOOR,
    )  # fmt: skip
    return drawn, chosen, sorted(systems)


def labelling_design(dataset: Dataset) -> sampling.Design | None:
    """The sampling design of the labels made so far under the dataset's "least certain"
    policy (sampling.priority_design), from the same facts as the labelling queue: every
    graded answer's uncertainty under the dataset's finished runs, and which answers have
    a human label. None under the other policies, whose queue order is a simple random
    draw (the labelled answers need no weights). Two queries (each answer's uncertainty is
    kept while the runs do not move: kept.answer_uncertainties). System answers only, as
    the queue: cross-evaluation runs grade perfect answers, which no analytics figure
    scores."""
    if dataset.label_policy != "uncertain":
        return None
    _, uncertainty, judged = _uncertainties(dataset, None)
    labelled = set(
        HumanLabel.objects.filter(answer__query__dataset=dataset)
        .values_list("answer_id", flat=True)
        .distinct()
        .order_by()
    )
    return sampling.priority_design(
        dataset.pk,
        (
            (a, sampling.size(u, judged[a]), a in labelled)
            for a, u in uncertainty.items()
            if u is not None
        ),
    )


def labelling_queue(
    dataset: Dataset,
    user: AnyUser,
    *,
    run: Run | None = None,
    mine: bool = False,
    recent: bool = False,
    perfect: bool = False,
) -> KeptQueue:
    """The dataset's labelling queue under its label policy, in order, read from its kept
    order (ordered again once per change of runs, labels or policy); the items of a slice
    are made with their live per-answer facts (_labelling_items). `recent`: an order kept
    before the latest labels will do (kept.latest: moving on to the next item). The
    systems' answers; with `perfect`, the perfect answers of cross-evaluation instead."""
    runs = [run] if run is not None else labelling_runs(dataset, perfect=perfect)
    by_pk = {r.pk: r for r in runs}
    answers = "perfect" if perfect else "system"
    policy = f"{dataset.label_policy}.{dataset.label_share!r}.at-least-{LABEL_FLOOR}.{answers}"
    header, found = _kept_header(
        dataset, run, sorted(runs, key=lambda r: r.pk), figure=readers.LABELLING_QUEUE,
        facts=(policy,), recent=recent, part="perfect" if perfect else "",
        fill=lambda header_id: kept.write_labelling(
            header_id, *_labelling_order(dataset, run, perfect)
        ),
        group=refresh_group(readers.LABELLING_QUEUE, run, perfect=perfect),
    )  # fmt: skip
    queue = _queue(header, found, lambda rows: _labelling_items(rows, user, by_pk))
    return _mine(queue, user, LABELLING) if mine else queue


def _mine(queue: KeptQueue, user: AnyUser, name: str) -> KeptQueue:
    """The items assigned to `user`, as a condition on the rows."""
    assigned = ReviewAssignment.objects.filter(
        queue=name, assignee=user.pk, answer_id=OuterRef("answer_id")
    )
    if name == LABELLING:
        assigned = assigned.filter(criterion__isnull=True)
    else:
        assigned = assigned.filter(criterion_id=OuterRef("criterion_id"))
    return queue.narrowed(queue.rows.filter(Exists(assigned)))


# --- disagreement queue ---------------------------------------------------------------------


@dataclass
class DisagreementItem:
    answer_id: int
    criterion_id: int
    facts: queues.ItemFacts
    assignment: ReviewAssignment | None
    run: Run
    url: str = ""  # the review page, set by the view
    answer: Answer | None = None  # loaded for the items shown (load_answers)
    criterion: Criterion | None = None

    @property
    def key(self) -> tuple[int, ...]:
        return (self.answer_id, self.criterion_id)


@dataclass
class DisagreementQueue:
    items: KeptQueue
    adjudicated: int = 0  # disagreeing items already decided (left out of `items`)


def _disagreement_items(rows: list[KeptQueueRow], by_pk: dict[int, Run]) -> list:
    assigned = _assigned(rows, DISAGREEMENT)
    items = []
    for r in rows:
        if r.run_id not in by_pk:
            # An earlier order served while the current one is counted (the cold rule):
            # its run has left the queue since (archived, not done any more).
            continue
        facts = queues.ItemFacts(
            answer_id=r.answer_id, criterion_id=r.criterion_id, position=0,
            verdict=CriterionVerdict(
                outcome=r.outcome, passes=r.passes, fails=r.fails, invalid=r.invalid
            ),
            human_labels=("pass",) * r.human_pass + ("fail",) * r.human_fail,
        )  # fmt: skip
        item = DisagreementItem(
            answer_id=r.answer_id, criterion_id=r.criterion_id, facts=facts,
            assignment=assigned.get((r.answer_id, r.criterion_id)), run=by_pk[r.run_id],
        )  # fmt: skip
        items.append(item)
    return items


def disagreement_queue(
    dataset: Dataset,
    user: AnyUser,
    *,
    run: Run | None = None,
    mine: bool = False,
    recent: bool = False,
) -> DisagreementQueue:
    """Items where the panel's verdict differs from a human label or the judges split, by
    priority (evaluation.review.order.disagreement_key_sql), counted and ordered in the
    database and kept in that order per state of the runs and of the review (labels and
    adjudications: the review revision); a page reads its slice of the kept rows."""
    runs, by_pk = _run_map(dataset, run)
    if not runs:
        empty = KeptQueue(KeptQueueRow.objects.none(), lambda rows: [], 0)
        return DisagreementQueue(items=empty)
    # In the ranked order, not the ids' order: it picks each answer's run.
    ranked = sorted(runs, key=lambda r: (r.finished_at or _EPOCH, r.pk))
    prepare, fill = kept.disagreement_fill(dataset.pk, ranked)
    header, found = _kept_header(
        dataset, run, ranked, figure=readers.DISAGREEMENT_QUEUE, facts=(), recent=recent,
        fill=fill, prepare=prepare, group=refresh_group(readers.DISAGREEMENT_QUEUE, run),
    )  # fmt: skip
    queue = _queue(header, found, lambda rows: _disagreement_items(rows, by_pk))
    if mine:
        queue = _mine(queue, user, DISAGREEMENT)
    adjudicated = header.cells["adjudicated"] if header is not None else 0
    return DisagreementQueue(items=queue, adjudicated=adjudicated)


# --- review page ----------------------------------------------------------------------------


# --- filters, position and skip -------------------------------------------------------------
