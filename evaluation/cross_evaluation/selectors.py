"""Reads for cross-evaluation: a query's overlap matrix, a dataset's mean overlap with its
interval, distribution and shared core, and the drill-down of one cell.

Where the verdicts come from (`Source`):
- "latest" (the default): for each query, the newest cross-evaluation run of the dataset
  that holds verdicts on that query's perfect answers; the panel's aggregated verdict per
  criterion;
- "run:<id>": one cross-evaluation run for every query;
- "human": reviewers' labels on perfect answers (majority; a tie is undecided).
In every source an adjudication, where present, decides the criterion.

Everything is loaded in a fixed number of queries, whatever the number of queries,
checklists and verdicts.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.db.models import Count

from annotation.models import Checklist, Criterion, Dataset, Query
from evaluation.answers.models import Answer
from evaluation.cross_evaluation import counted
from evaluation.cross_evaluation.sources import Source, UnknownSource, cross_evaluation_runs
from evaluation.labels.models import Adjudication, HumanLabel
from evaluation.metrics import overlap as om
from evaluation.metrics.aggregation import Vote, aggregate
from evaluation.runs.models import Run, Verdict

if TYPE_CHECKING:
    import datetime as dt


@dataclass
class QueryOverlap:
    query: Query
    checklists: list[Checklist]  # the query's submitted checklists, by id
    answers: dict[int, Answer]  # perfect answers by checklist id
    criteria: dict[int, list[Criterion]]  # scored criteria by checklist id
    outcomes: dict[tuple[int, int], str]  # (A's checklist id, criterion id) -> verdict
    matrix: om.OverlapMatrix
    run: Run | None = None
    stale: set[int] = field(default_factory=set)  # rows whose answer changed after grading

    def rows(self) -> list[tuple[Checklist, list[tuple[Checklist, om.PairOverlap | None]]]]:
        """For templates: each checklist A with its cells (B, overlap(A→B))."""
        return [
            (a, [(b, self.matrix.cell(a.pk, b.pk)) for b in self.checklists])
            for a in self.checklists
        ]


@dataclass
class DatasetOverlap:
    dataset: Dataset
    source: Source
    queries: list[QueryOverlap]
    interval: om.Interval
    histogram: list[om.Bin]
    core: list[tuple[om.CriterionCoverage, Criterion]]
    tail: list[tuple[om.CriterionCoverage, Criterion]]

    @property
    def pairs(self) -> list[tuple[QueryOverlap, om.PairOverlap]]:
        return [(q, p) for q in self.queries for p in q.matrix.pairs()]


def _load(dataset: Dataset, source: Source, query: Query | None = None) -> list[QueryOverlap]:
    checklists = Checklist.objects.filter(
        query__dataset=dataset, status=Checklist.Status.SUBMITTED
    ).select_related("author", "query")
    if query is not None:
        checklists = checklists.filter(query=query)
    checklists = list(checklists.order_by("query_id", "id"))
    ids = [c.pk for c in checklists]
    by_id = {c.pk: c for c in checklists}
    criteria: dict[int, list[Criterion]] = defaultdict(list)
    for criterion in (
        Criterion.objects.active()
        .filter(checklist__in=ids, scoring_enabled=True)
        .order_by("checklist_id", "position", "id")
    ):
        criterion.checklist = by_id[criterion.checklist_id]  # already loaded: no query each
        criteria[criterion.checklist_id].append(criterion)
    answers = {
        a.checklist_id: a
        for a in Answer.objects.filter(checklist__in=ids).select_related("author", "drafted_by")
    }
    checklist_of = {a.pk: a.checklist_id for a in answers.values()}
    outcomes, run_of_query, graded_at = _outcomes(dataset, source, checklist_of, answers)
    by_query: dict[int, list[Checklist]] = defaultdict(list)
    for checklist in checklists:
        by_query[checklist.query_id].append(checklist)
    result = []
    for query_id, members in by_query.items():
        keys = [c.pk for c in members]
        query_outcomes = {
            (a, c.pk): outcomes[a, c.pk]
            for a in keys
            for b in keys
            for c in criteria.get(b, ())
            if (a, c.pk) in outcomes
        }
        matrix = om.overlap_matrix(
            keys,
            {b: [c.pk for c in criteria.get(b, ())] for b in keys},
            query_outcomes,
            with_answer=[k for k in keys if k in answers],
        )
        stale = {
            k
            for k in keys
            if k in answers and k in graded_at and answers[k].updated_at > graded_at[k]
        }
        result.append(
            QueryOverlap(
                query=members[0].query,
                checklists=members,
                answers={k: answers[k] for k in keys if k in answers},
                criteria={k: criteria.get(k, []) for k in keys},
                outcomes=query_outcomes,
                matrix=matrix,
                run=run_of_query.get(query_id),
                stale=stale,
            )
        )
    return result


def _outcomes(
    dataset: Dataset, source: Source, checklist_of: dict[int, int], answers: dict[int, Answer]
) -> tuple[dict[tuple[int, int], str], dict[int, Run], dict[int, dt.datetime]]:
    """(checklist id of A, criterion id) -> verdict; the run used per query; and when each
    perfect answer was last graded (to flag answers edited since)."""
    answer_ids = list(checklist_of)
    adjudicated = {
        (a, c): label
        for a, c, label in Adjudication.objects.filter(answer__in=answer_ids).values_list(
            "answer_id", "criterion_id", "label"
        )
    }
    outcomes: dict[tuple[int, int], str] = {}
    run_of_query: dict[int, Run] = {}
    graded_at: dict[int, dt.datetime] = {}
    if source.kind == "human":
        labels: dict[tuple[int, int], list[str]] = defaultdict(list)
        for a, c, label in HumanLabel.objects.filter(answer__in=answer_ids).values_list(
            "answer_id", "criterion_id", "label"
        ):
            labels[a, c].append(label)
        for a, c in set(labels) | set(adjudicated):
            outcomes[checklist_of[a], c] = om.decided_outcome(
                adjudication=adjudicated.get((a, c)), labels=labels.get((a, c), ())
            )
        return outcomes, run_of_query, graded_at
    runs = {r.pk: r for r in cross_evaluation_runs(dataset)}
    if source.kind == "run":
        if source.run_id not in runs:
            raise UnknownSource(f"Run {source.run_id} is not a cross-evaluation of this dataset.")
        chosen_runs = {source.run_id}
        query_ids = {a.query_id for a in answers.values()}
        run_of_query = {q: runs[source.run_id] for q in query_ids}
    else:
        # The newest run (runs are ordered newest first) with verdicts on each query.
        graded = (
            Verdict.objects.filter(run__in=list(runs), answer__in=answer_ids)
            .values_list("run_id", "answer__query_id")
            .annotate(n=Count("id"))
            .order_by()
        )
        order = {pk: i for i, pk in enumerate(runs)}
        for run_id, query_id, _n in graded:
            current = run_of_query.get(query_id)
            if current is None or order[run_id] < order[current.pk]:
                run_of_query[query_id] = runs[run_id]
        chosen_runs = {r.pk for r in run_of_query.values()}
    votes: dict[tuple[int, int], list[Vote]] = defaultdict(list)
    rows = Verdict.objects.filter(run__in=chosen_runs, answer__in=answer_ids).values_list(
        "run_id", "answer_id", "answer__query_id", "criterion_id", "judge_id", "sample",
        "outcome", "updated_at",
    )  # fmt: skip
    for run_id, a, query_id, c, judge, sample, outcome, updated in rows:
        if run_of_query.get(query_id) is None or run_of_query[query_id].pk != run_id:
            continue
        votes[a, c].append(Vote(str(judge), sample, outcome))
        key = checklist_of[a]
        graded_at[key] = max(graded_at.get(key, updated), updated)
    for (a, c), answer_votes in votes.items():
        run = run_of_query[answers[checklist_of[a]].query_id]
        verdict = aggregate(answer_votes, run.panel_method, threshold=run.panel_threshold)
        outcomes[checklist_of[a], c] = om.decided_outcome(
            adjudication=adjudicated.get((a, c)), panel=verdict.outcome
        )
    for (a, c), label in adjudicated.items():
        outcomes.setdefault((checklist_of[a], c), label)
    return outcomes, run_of_query, graded_at


def query_overlap(query: Query, source: Source) -> QueryOverlap | None:
    """The query's matrix, or None when it has no submitted checklist."""
    found = _load(query.dataset, source, query)
    return found[0] if found else None


def dataset_overlap(dataset: Dataset, source: Source) -> DatasetOverlap:
    queries = _load(dataset, source)
    interval = om.mean_overlap({q.query.pk: q.matrix.pairs() for q in queries})
    values = [p.overlap for q in queries for p in q.matrix.pairs() if p.overlap is not None]
    criterion_by_id = {c.pk: c for q in queries for cs in q.criteria.values() for c in cs}
    coverage = []
    for q in queries:
        coverage.extend(
            om.criterion_coverage(
                {b: [c.pk for c in cs] for b, cs in q.criteria.items()},
                q.outcomes,
                with_answer=list(q.answers),
            )
        )
    # Only criteria that at least one other expert's perfect answer was graded on.
    core, tail = om.core_and_tail(coverage)
    return DatasetOverlap(
        dataset=dataset,
        source=source,
        queries=queries,
        interval=interval,
        histogram=om.histogram(values),
        core=[(c, criterion_by_id[c.criterion]) for c in core],
        tail=[(c, criterion_by_id[c.criterion]) for c in tail],
    )


def dataset_mean_overlap(dataset: Dataset) -> om.Interval:
    """The human reference line for analytics charts: the dataset's mean overlap over
    ordered pairs of experts (latest cross-evaluation of each query), with its 95% interval.
    `mean` is None until some pair has been graded. Counted in the database and cached
    (evaluation.cross_evaluation.counted)."""

    return counted.interval_of(counted.figures(dataset, Source("latest")))


@dataclass(frozen=True)
class CellRow:
    criterion: Criterion
    outcome: str
    votes: list[Verdict]
    labels: list[HumanLabel]
    adjudication: Adjudication | None


def cell_detail(overlap: QueryOverlap, a: int, b: int, source: Source) -> list[CellRow] | None:
    """Which of B's criteria A's perfect answer covered, with the votes (or labels) behind
    each verdict. None when the cell does not exist."""
    if a not in overlap.answers or b not in overlap.criteria:
        return None
    answer = overlap.answers[a]
    criteria = overlap.criteria[b]
    ids = [c.pk for c in criteria]
    votes: dict[int, list[Verdict]] = defaultdict(list)
    if overlap.run is not None and source.kind != "human":
        for verdict in (
            Verdict.objects.filter(run=overlap.run, answer=answer, criterion__in=ids)
            .select_related("judge")
            .order_by("judge__name", "sample")
        ):
            votes[verdict.criterion_id].append(verdict)
    labels: dict[int, list[HumanLabel]] = defaultdict(list)
    for label in HumanLabel.objects.filter(answer=answer, criterion__in=ids).order_by("rater"):
        labels[label.criterion_id].append(label)
    adjudications = {
        adj.criterion_id: adj
        for adj in Adjudication.objects.filter(answer=answer, criterion__in=ids)
    }
    return [
        CellRow(
            criterion=c,
            outcome=overlap.outcomes.get((a, c.pk), "undecided"),
            votes=votes.get(c.pk, []),
            labels=labels.get(c.pk, []),
            adjudication=adjudications.get(c.pk),
        )
        for c in criteria
    ]
