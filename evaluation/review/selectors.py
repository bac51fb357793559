"""Reads of the review: the queues of a dataset and the rows of the review page.

Which verdicts stand for "the judges" on an answer: those of the run the reviewer chose
(?run=), or else the latest done run that graded the answer (latest by finish time, then
id). Each run is aggregated with its own panel's method (evaluation.metrics.aggregation), so
unparseable and errored votes are shown but never counted.

Every function here runs a fixed number of queries, whatever the size of the dataset.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.db import connection
from django.db.models import Count
from guardian.shortcuts import get_users_with_perms

from annotation import roles
from annotation.models import Checklist, Criterion, Dataset
from evaluation import figure_cache, votes_sql
from evaluation.metrics.aggregation import CriterionVerdict, Vote, aggregate
from evaluation.models import (
    Adjudication,
    Answer,
    HumanLabel,
    ReviewAssignment,
    Run,
    Verdict,
)
from evaluation.review import queues

if TYPE_CHECKING:
    from annotation.permissions import AnyUser

LABELLING = ReviewAssignment.Queue.LABELLING
DISAGREEMENT = ReviewAssignment.Queue.DISAGREEMENT
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _reviewable_criteria(**filters: object):
    # Archived criteria keep their labels but take no new ones (annotation.models.Criterion).
    return Criterion.objects.active().filter(
        checklist__status=Checklist.Status.SUBMITTED, scoring_enabled=True, **filters
    )


def _latest(runs: list[Run]) -> Run | None:
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
    return {a: latest for a, rs in graded.items() if (latest := _latest(rs)) is not None}


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


_HISTOGRAM_SQL = """
SELECT run_id, answer_id, p, f, count(*) FROM (
  SELECT v.run_id, v.answer_id, v.criterion_id,
         sum(CASE WHEN v.outcome = 'pass' THEN 1 ELSE 0 END) AS p,
         sum(CASE WHEN v.outcome = 'fail' THEN 1 ELSE 0 END) AS f
  FROM evaluation_verdict v WHERE v.run_id IN ({runs})
  GROUP BY v.run_id, v.answer_id, v.criterion_id
) item GROUP BY run_id, answer_id, p, f
"""


def _vote_histogram(dataset: Dataset, runs: list[Run]) -> list[list[int]]:
    """(run, answer, passes, fails, criteria) rows: how many criteria of each answer got each
    split of valid votes in each run. Counted in the database, and kept in the figure cache
    while the runs have ended and not moved (their verdicts change only when a run is
    resumed, retried or imported again, which moves its status, attempt or finish time)."""
    from evaluation.models import AgreementCache

    if not runs:
        return []
    state = ",".join(
        f"{r.pk}.{r.status}.{r.attempt}.{r.finished_at.isoformat() if r.finished_at else ''}"
        for r in sorted(runs, key=lambda r: r.pk)
    )
    key = "queue-votes:" + hashlib.sha256(state.encode()).hexdigest()
    cacheable = all(r.ended for r in runs)
    if cacheable:
        for rows in AgreementCache.objects.filter(dataset=dataset, key=key).values_list(
            "cells", flat=True
        ):
            return rows
    placeholders = ", ".join(["%s"] * len(runs))
    with connection.cursor() as cursor:
        cursor.execute(
            _HISTOGRAM_SQL.format(runs=placeholders),
            [r.pk for r in runs],
        )
        rows = [[int(v) for v in row] for row in cursor.fetchall()]
    if cacheable:
        figure_cache.store(dataset.pk, "queue-votes", key, rows)
    return rows


def _uncertainties(
    dataset: Dataset, run: Run | None
) -> tuple[dict[int, Run], dict[int, float | None]]:
    """For each graded answer: the run whose verdicts count (as runs_by_answer) and the
    judges' uncertainty on it (queues.uncertainty, from counted splits)."""
    if run is not None:
        runs = [run]
    else:
        runs = list(Run.objects.filter(dataset=dataset, status=Run.Status.DONE))
    by_pk = {r.pk: r for r in runs}
    rows = _vote_histogram(dataset, runs)
    graded: dict[int, list[Run]] = defaultdict(list)
    for run_id, answer_id, *_ in rows:
        if not graded[answer_id] or graded[answer_id][-1].pk != run_id:
            graded[answer_id].append(by_pk[run_id])
    if run is not None:
        chosen = {a: run for a in graded}
    else:
        chosen = {a: latest for a, rs in graded.items() if (latest := _latest(rs)) is not None}
    totals: dict[int, list[float]] = defaultdict(lambda: [0.0, 0])
    for run_id, answer_id, p, f, n in rows:
        counted = chosen.get(answer_id)
        if counted is None or counted.pk != run_id or p + f == 0:
            continue
        total = totals[answer_id]
        total[0] += n * (1 - abs(2 * (p / (p + f)) - 1))
        total[1] += n
    return chosen, {a: (t[0] / t[1] if t[1] else None) for a, t in totals.items()}


def _assignments(dataset: Dataset, queue: str) -> dict[tuple[int, int | None], ReviewAssignment]:
    rows = ReviewAssignment.objects.filter(queue=queue, answer__query__dataset=dataset)
    return {(a.answer_id, a.criterion_id): a for a in rows.select_related("assignee")}


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


def labelling_queue(
    dataset: Dataset, user: AnyUser, *, run: Run | None = None, mine: bool = False
) -> list[LabellingItem]:
    """The dataset's labelling queue under its label policy, in order, without the answers
    themselves (load_answers fills a page of them). Seven queries; the votes are counted in
    the database, the rest are one number per answer or query."""
    chosen, uncertainty = _uncertainties(dataset, run)
    criteria = dict(
        _reviewable_criteria(checklist__query__dataset=dataset)
        .values_list("checklist__query_id")
        .annotate(n=Count("pk"))
        .order_by()
    )
    labels = HumanLabel.objects.filter(answer__query__dataset=dataset)
    all_labels = dict(labels.values_list("answer_id").annotate(n=Count("pk")).order_by())
    own = dict(
        labels.filter(rater=user.get_username())
        .values_list("answer_id")
        .annotate(n=Count("pk"))
        .order_by()
    )
    answers = Answer.objects.filter(query__dataset=dataset).values_list("pk", "query_id")
    facts = [
        queues.AnswerFacts(
            answer_id=pk,
            criteria=criteria.get(query_id, 0),
            labels=all_labels.get(pk, 0),
            uncertainty=uncertainty.get(pk),
        )
        for pk, query_id in answers.order_by("query_id", "system_id", "pk")
    ]
    ordered = queues.labelling_queue(
        facts, policy=dataset.label_policy, share=dataset.label_share, dataset_id=dataset.pk
    )
    assigned = _assignments(dataset, LABELLING)
    items = [
        LabellingItem(
            answer_id=f.answer_id, facts=f, mine=own.get(f.answer_id, 0),
            assignment=assigned.get((f.answer_id, None)), run=chosen.get(f.answer_id),
        )
        for f in ordered
    ]  # fmt: skip
    if mine:
        items = [i for i in items if i.assignment and i.assignment.assignee_id == user.pk]
    return items


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
    items: Sequence[DisagreementItem]
    adjudicated: int = 0  # disagreeing items already decided (left out of `items`)


# Every (answer, criterion) the chosen run of its answer judged, with its vote counts, its
# human labels counted and whether it was adjudicated; only the disagreeing ones, in queue
# order (queues.disagreement_queue: split first, the most even split first, then the most
# contradicting human labels; then answer, criterion in page order). The chosen run of an
# answer is the highest-ranked run that judged it (`rank`: the caller's order).
_DISAGREEMENT_SQL = """
WITH item AS (
  SELECT v.run_id, v.answer_id, v.criterion_id,
         sum(CASE WHEN v.outcome = 'pass' THEN 1 ELSE 0 END) AS p,
         sum(CASE WHEN v.outcome = 'fail' THEN 1 ELSE 0 END) AS f,
         sum(CASE WHEN v.outcome IN ('unparseable', 'error') THEN 1 ELSE 0 END) AS i,
         {rank} AS run_rank
  FROM evaluation_verdict v WHERE v.run_id IN ({runs})
  GROUP BY v.run_id, v.answer_id, v.criterion_id
),
chosen AS (
  SELECT item.*, {outcome} AS outcome,
         max(run_rank) OVER (PARTITION BY answer_id) AS best
  FROM item
),
lab AS (
  SELECT l.answer_id, l.criterion_id,
         sum(CASE WHEN l.label = 'pass' THEN 1 ELSE 0 END) AS lp,
         sum(CASE WHEN l.label = 'fail' THEN 1 ELSE 0 END) AS lf
  FROM evaluation_humanlabel l
  JOIN evaluation_answer a ON a.id = l.answer_id
  JOIN annotation_query q ON q.id = a.query_id
  WHERE q.dataset_id = %s
  GROUP BY l.answer_id, l.criterion_id
),
facts AS (
  SELECT x.answer_id, x.criterion_id, x.run_id, x.outcome, x.p, x.f, x.i,
         coalesce(lab.lp, 0) AS lp, coalesce(lab.lf, 0) AS lf,
         CASE WHEN d.id IS NULL THEN 0 ELSE 1 END AS adjudicated,
         CASE WHEN x.p > 0 AND x.f > 0 THEN 1 ELSE 0 END AS split,
         CASE x.outcome WHEN 'pass' THEN coalesce(lab.lf, 0)
                        WHEN 'fail' THEN coalesce(lab.lp, 0) ELSE 0 END AS contradicting,
         c.checklist_id, c.position
  FROM chosen x
  JOIN annotation_criterion c ON c.id = x.criterion_id
  LEFT JOIN lab ON lab.answer_id = x.answer_id AND lab.criterion_id = x.criterion_id
  LEFT JOIN evaluation_adjudication d
    ON d.answer_id = x.answer_id AND d.criterion_id = x.criterion_id
  WHERE x.run_rank = x.best
)
SELECT answer_id, criterion_id, run_id, outcome, p, f, i, lp, lf, adjudicated
FROM facts WHERE split = 1 OR contradicting > 0
ORDER BY adjudicated, 1 - split,
         CASE WHEN p + f = 0 THEN 1.0 ELSE (1.0 * abs(p - f)) / (p + f) END,
         contradicting DESC, answer_id, checklist_id, position, criterion_id
"""


def _disagreements(dataset: Dataset, runs: list[Run]) -> list[list]:
    """The rows of _DISAGREEMENT_SQL (adjudicated ones first, then the queue in order), from
    the figure cache while the runs have ended and not moved and the dataset's labels and
    adjudications are as they were (its review revision)."""
    from evaluation.agreement import revision
    from evaluation.models import AgreementCache

    if not runs:
        return []
    ranked = sorted(runs, key=lambda r: (r.finished_at or _EPOCH, r.pk))
    state = ",".join(
        f"{r.pk}.{r.status}.{r.attempt}.{r.finished_at.isoformat() if r.finished_at else ''}."
        f"{r.panel_method}.{r.panel_threshold!r}"
        for r in ranked
    )
    key = (
        "disagreements:"
        + hashlib.sha256(f"{state}|{revision.current(dataset.pk)}".encode()).hexdigest()
    )
    cacheable = all(r.ended for r in runs)
    if cacheable:
        for rows in AgreementCache.objects.filter(dataset=dataset, key=key).values_list(
            "cells", flat=True
        ):
            return rows
    rank = (
        "CASE v.run_id " + " ".join(f"WHEN {r.pk} THEN {n}" for n, r in enumerate(ranked)) + " END"
    )
    methods = " ".join(
        f"WHEN {r.pk} THEN {votes_sql.panel_outcome(r.panel_method, r.panel_threshold, 'p', 'f')}"
        for r in ranked
    )
    outcome = f"CASE run_id {methods} END"
    sql = _DISAGREEMENT_SQL.format(
        rank=rank, outcome=outcome, runs=", ".join(str(r.pk) for r in ranked)
    )  # only integers and our own expressions go into the text
    with connection.cursor() as cursor:
        cursor.execute(sql, [dataset.pk])
        rows = [[*(int(v) for v in row[:3]), row[3], *(int(v) for v in row[4:])]
                for row in cursor.fetchall()]  # fmt: skip
    if cacheable:
        figure_cache.store(dataset.pk, "disagreements", key, rows)
    return rows


class _Items(Sequence):
    """The disagreement queue's items, made from their rows only when read: a queue of
    100,000 items is a page of 50 on screen, and building them all costs more than the
    page."""

    def __init__(self, rows: list[list], runs: dict[int, Run], assigned: dict) -> None:
        self.rows, self.runs, self.assigned = rows, runs, assigned
        self.made: dict[int, DisagreementItem] = {}

    def __len__(self) -> int:
        return len(self.rows)

    def _item(self, n: int) -> DisagreementItem:
        if n not in self.made:
            answer_id, criterion_id, run_id, outcome, p, f, i, lp, lf, _ = self.rows[n]
            facts = queues.ItemFacts(
                answer_id=answer_id, criterion_id=criterion_id, position=0,
                verdict=CriterionVerdict(outcome=outcome, passes=p, fails=f, invalid=i),
                human_labels=("pass",) * lp + ("fail",) * lf,
            )  # fmt: skip
            self.made[n] = DisagreementItem(
                answer_id=answer_id, criterion_id=criterion_id, facts=facts,
                assignment=self.assigned.get((answer_id, criterion_id)), run=self.runs[run_id],
            )  # fmt: skip
        return self.made[n]

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self._item(n) for n in range(*index.indices(len(self.rows)))]
        if index < 0:
            index += len(self.rows)
        if not 0 <= index < len(self.rows):
            raise IndexError(index)
        return self._item(index)


def disagreement_queue(
    dataset: Dataset, user: AnyUser, *, run: Run | None = None, mine: bool = False
) -> DisagreementQueue:
    """Items where the panel's verdict differs from a human label or the judges split, by
    priority (evaluation.review.queues.disagreement_queue), counted and ordered in the
    database; items are made when read, and their answers and criteria loaded for the shown
    page only (load_answers)."""
    if run is not None:
        runs = [run]
    else:
        runs = list(Run.objects.filter(dataset=dataset, status=Run.Status.DONE))
    by_pk = {r.pk: r for r in runs}
    rows = _disagreements(dataset, runs)
    assigned = _assignments(dataset, DISAGREEMENT)
    adjudicated = sum(1 for row in rows if row[9])
    open_rows = [row for row in rows if not row[9]]
    if mine:
        open_rows = [
            row
            for row in open_rows
            if (found := assigned.get((row[0], row[1]))) is not None
            and found.assignee_id == user.pk
        ]
    return DisagreementQueue(items=_Items(open_rows, by_pk, assigned), adjudicated=adjudicated)


def next_item(
    dataset: Dataset,
    user: AnyUser,
    *,
    queue: str,
    current: tuple[int, ...],
    run: Run | None = None,
    mine: bool = False,
    filters: QueueFilters | None = None,
    skipped: frozenset[tuple[int, ...]] = frozenset(),
) -> tuple[LabellingItem | DisagreementItem, tuple[int, int]] | None:
    """The item to review after `current` in the filtered queue, with its position there
    (X of N, 1-based). Labelling: the next answer in queue order that the user has not
    labelled completely. Disagreement: the next item in queue order (adjudicated ones have
    left it). Both wrap around. Items the reviewer skipped come only when nothing else is
    left. The position counts the whole filtered queue, the items done included."""
    items, _ = filtered_queue(
        dataset, user, queue=queue, run=run, mine=mine, filters=filters or QueueFilters()
    )
    keys = _keys(items)
    open_keys = keys
    if queue == LABELLING:
        open_keys = [i.key for i in items if not i.done_by_me or i.key == current]
    fresh = [k for k in open_keys if k not in skipped or k == current]
    following = queues.next_after(fresh, current)
    if following is None:
        following = queues.next_after(open_keys, current)
    if following is None:
        return None
    index = keys.index(following)
    return items[index], (index + 1, len(keys))


# --- review page ----------------------------------------------------------------------------


@dataclass
class ReviewRow:
    """One criterion of the review page with everything said about it."""

    criterion: Criterion
    votes: list[Verdict] = field(default_factory=list)
    verdict: CriterionVerdict | None = None  # None when no run graded the answer
    labels: list[HumanLabel] = field(default_factory=list)
    own: HumanLabel | None = None
    adjudication: Adjudication | None = None
    # Set by the adjudication view when the reviewer's decision lost a race: the decision
    # that stands (None: removed), shown so that they can decide again knowingly.
    conflict: bool = False
    error: str = ""

    @property
    def author(self) -> str:
        return self.criterion.checklist.author.get_username()

    @property
    def final(self) -> str:
        """The label that stands: the adjudication once there is one (its pass replaces the
        panel's fail bar), else the panel's verdict; "none" without either."""
        if self.adjudication is not None:
            return self.adjudication.label
        return self.verdict.outcome if self.verdict is not None else "none"

    @property
    def others(self) -> list[HumanLabel]:
        return [label for label in self.labels if label is not self.own]


def graded_runs(answer: Answer) -> list[Run]:
    """Runs holding verdicts on the answer, newest first."""
    return list(
        Run.objects.filter(dataset=answer.query.dataset_id, verdicts__answer=answer)
        .select_related("panel")
        .distinct()
        .order_by("-created_at", "-id")
    )


def default_run(runs: list[Run]) -> Run | None:
    return _latest(runs)


def review_rows(
    answer: Answer, user: AnyUser, run: Run | None, *, criterion: Criterion | None = None
) -> list[ReviewRow]:
    """Every reviewable criterion of the answer's query (or just `criterion`) with the run's
    votes and verdict, the human labels and the adjudication. Four queries."""
    criteria = _reviewable_criteria(checklist__query=answer.query_id)
    if criterion is not None:
        criteria = criteria.filter(pk=criterion.pk)
    rows = {
        c.pk: ReviewRow(criterion=c)
        for c in criteria.select_related("checklist__author").order_by("checklist_id", "position")
    }
    if run is not None:
        verdicts = Verdict.objects.filter(run=run, answer=answer, criterion__in=rows)
        for verdict in verdicts.select_related("judge").order_by("judge__name", "sample"):
            rows[verdict.criterion_id].votes.append(verdict)
        for row in rows.values():
            row.verdict = aggregate(
                [Vote(str(v.judge_id), v.sample, v.outcome) for v in row.votes],
                run.panel_method,
                threshold=run.panel_threshold,
            )
    username = user.get_username()
    for label in HumanLabel.objects.filter(answer=answer, criterion__in=rows).order_by("rater"):
        row = rows[label.criterion_id]
        row.labels.append(label)
        if label.rater == username:
            row.own = label
    adjudications = Adjudication.objects.filter(answer=answer, criterion__in=rows)
    for adjudication in adjudications.select_related("decided_by"):
        rows[adjudication.criterion_id].adjudication = adjudication
    return list(rows.values())


# --- filters, position and skip -------------------------------------------------------------


@dataclass(frozen=True)
class QueueFilters:
    """What a reviewer narrowed a queue to. `q` searches the query's text (and, in the
    disagreement queue, the criterion's); `system` keeps one system's answers; `kind` and
    `author` keep criteria of one kind or from one expert's checklist, so they narrow the
    disagreement queue only (a labelling item is a whole answer)."""

    q: str = ""
    kind: str = ""
    system: int | None = None
    author: int | None = None

    @property
    def active(self) -> bool:
        return bool(self.q or self.kind or self.system or self.author)

    def params(self) -> dict[str, object]:
        """The non-empty filters as URL parameters."""
        values = {"q": self.q, "kind": self.kind, "system": self.system, "author": self.author}
        return {k: v for k, v in values.items() if v}


def _answer_ids(dataset: Dataset, filters: QueueFilters, *, search: bool) -> set[int] | None:
    """Answers of the dataset kept by the system filter (and the query search when `search`);
    None when neither narrows anything. One query."""
    if not filters.system and not (search and filters.q):
        return None
    answers = Answer.objects.filter(query__dataset=dataset)
    if filters.system:
        answers = answers.filter(system_id=filters.system)
    if search and filters.q:
        answers = answers.filter(query__text__icontains=filters.q)
    return set(answers.values_list("pk", flat=True))


def filter_labelling(
    items: list[LabellingItem], dataset: Dataset, filters: QueueFilters
) -> list[LabellingItem]:
    """The labelling items whose answer matches the system and the query search."""
    kept = _answer_ids(dataset, filters, search=True)
    return items if kept is None else [i for i in items if i.answer_id in kept]


def filter_disagreements(
    queue: DisagreementQueue, dataset: Dataset, filters: QueueFilters
) -> DisagreementQueue:
    """The disagreement items matching every filter: at most three queries over the
    dataset's answers and criteria (indexed, a few thousand ids), then a pass over the cached
    rows; nothing is joined to the verdicts again."""
    if not filters.active or not isinstance(queue.items, _Items):
        return queue
    by_system = _answer_ids(dataset, filters, search=False)
    criteria: set[int] | None = None
    if filters.kind or filters.author:
        found = Criterion.objects.filter(checklist__query__dataset=dataset)
        if filters.kind:
            found = found.filter(kind=filters.kind)
        if filters.author:
            found = found.filter(checklist__author_id=filters.author)
        criteria = set(found.values_list("pk", flat=True))
    searched_answers: set[int] = set()
    searched_criteria: set[int] = set()
    if filters.q:
        searched_answers = set(
            Answer.objects.filter(
                query__dataset=dataset, query__text__icontains=filters.q
            ).values_list("pk", flat=True)
        )
        searched_criteria = set(
            Criterion.objects.filter(
                checklist__query__dataset=dataset, text__icontains=filters.q
            ).values_list("pk", flat=True)
        )

    def keep(row: list) -> bool:
        answer_id, criterion_id = row[0], row[1]
        if by_system is not None and answer_id not in by_system:
            return False
        if criteria is not None and criterion_id not in criteria:
            return False
        if filters.q and answer_id not in searched_answers:
            return criterion_id in searched_criteria
        return True

    items = queue.items
    rows = [row for row in items.rows if keep(row)]
    return DisagreementQueue(
        items=_Items(rows, items.runs, items.assigned), adjudicated=queue.adjudicated
    )


def filter_choices(dataset: Dataset, *, authors: bool = True) -> dict[str, list]:
    """The systems with answers in the dataset and (when `authors`: the disagreement queue
    filters by them) the authors of its submitted checklists, for the filter menus. One
    query per list."""
    from django.contrib.auth import get_user_model

    from evaluation.models import System

    systems = list(System.objects.filter(answers__query__dataset=dataset).distinct())
    found = []
    if authors:
        found = list(
            get_user_model()
            .objects.filter(
                checklists__query__dataset=dataset, checklists__status=Checklist.Status.SUBMITTED
            )
            .distinct()
            .order_by("username")
        )
    return {"systems": systems, "authors": found, "kinds": list(Criterion.Kind.choices)}


def filtered_queue(
    dataset: Dataset,
    user: AnyUser,
    *,
    queue: str,
    run: Run | None = None,
    mine: bool = False,
    filters: QueueFilters = QueueFilters(),
) -> tuple[Sequence[LabellingItem] | Sequence[DisagreementItem], int]:
    """A queue's items after the filters, and the count of adjudicated items left out."""
    if queue == LABELLING:
        return filter_labelling(
            labelling_queue(dataset, user, run=run, mine=mine), dataset, filters
        ), 0
    result = filter_disagreements(
        disagreement_queue(dataset, user, run=run, mine=mine), dataset, filters
    )
    return result.items, result.adjudicated


def _keys(items: Sequence) -> list[tuple[int, ...]]:
    """The items' keys in order, without building the disagreement items."""
    if isinstance(items, _Items):
        return [(row[0], row[1]) for row in items.rows]
    return [i.key for i in items]
