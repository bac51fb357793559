"""The agreement figures as the app computed them before issue 14: every labelled item loaded
into Python, every figure a scan over the items. Kept unchanged as the test oracle of the SQL
counting (tests/evaluation/agreement/test_sql.py): both must give the same numbers.

Choices (documented in docs/metrics.md#agreement):
- The run: the one asked for, else the dataset's latest finished run that grades system
  answers or holds imported verdicts (cross-evaluation runs grade perfect answers, which
  reviewers do not label). Human-vs-human figures do not depend on the run.
- The human reference of an item: its adjudication if there is one, else the majority of
  its human labels; a tie leaves the item out of judge-vs-human figures (counted).
- A judge's label on an item: the majority of its valid samples (one label per item and
  judge, like a human's); a tie between samples leaves the item out of that judge's
  figure. The panel's label: the run panel's aggregated verdict (its own method).
- Only pass and fail votes count: unparseable and errored votes are excluded and counted.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from urllib.parse import urlencode

from django.db.models import Q
from django.utils import timezone

from annotation.models import Criterion, Dataset
from evaluation.answers.models import Answer
from evaluation.labels.models import Adjudication, HumanLabel
from evaluation.metrics.aggregation import INVALID_OUTCOMES, Method, Vote, aggregate
from evaluation.metrics.agreement import (
    PASS_FAIL,
    Agreement,
    alpha_over_raters,
    compare,
    majority,
)
from evaluation.runs.models import Run, Verdict

NO_VALUE = "(none)"

# Figures whose pairs are (a judge label, the human reference).
JUDGE_VS_HUMAN = ("panel", "judge", "kind", "source", "category", "system")
FIGURES = (*JUDGE_VS_HUMAN, "pair", "rater-judges", "rater-others")


@dataclass(frozen=True)
class Item:
    answer_id: int
    criterion_id: int
    query_id: int
    system: str
    kind: str
    source_types: tuple[str, ...]
    category: str
    labels: Mapping[str, str]  # rater -> pass / fail
    adjudication: str | None
    human: str | None  # the reference: adjudication, else majority of labels; None on a tie
    basis: str  # "adjudication", "majority", "tie" or "none" (no human label)
    judges: Mapping[str, str | None]  # judge name -> majority of its valid samples
    panel: str | None  # pass / fail / undecided; None when the run holds no vote on it
    invalid: int  # unparseable and errored votes, excluded


@dataclass(frozen=True)
class FigureKey:
    figure: str
    value: str = ""
    other: str = ""

    def __post_init__(self) -> None:
        if self.figure not in FIGURES:
            raise ValueError(f"unknown figure {self.figure!r}")

    def params(self, **extra: str) -> str:
        values = {"figure": self.figure, "value": self.value, "other": self.other, **extra}
        return urlencode({k: v for k, v in values.items() if v})


@dataclass(frozen=True)
class Figure:
    key: FigureKey
    label: str
    agreement: Agreement


@dataclass(frozen=True)
class RaterStats:
    rater: str
    labels: int
    days: int  # days with at least one label
    per_day: float | None  # labels / days
    first: date | None
    last: date | None
    with_judges: Figure  # the run panel's verdict vs this rater's labels
    with_others: Figure  # majority of the other raters vs this rater's labels


@dataclass(frozen=True)
class Counts:
    items: int  # items with a human label or an adjudication
    adjudicated: int
    human_ties: int  # no adjudication, tied human labels: no reference
    without_votes: int  # a human reference, but no vote in the run
    panel_undecided: int  # a human reference, votes, but the panel undecided
    invalid_votes: int  # unparseable / error votes on the labelled items, excluded
    # Items used as judge examples (issue 25): the oracle's runs have none; the test of
    # their exclusion (test_examples_excluded.py) recounts without them by hand.
    excluded: int = 0


@dataclass(frozen=True)
class AgreementReport:
    dataset: Dataset
    run: Run | None
    runs: list[Run]
    counts: Counts
    overall: Figure
    judges: list[Figure]
    kinds: list[Figure]
    sources: list[Figure]
    categories: list[Figure]
    systems: list[Figure]
    raters: list[str]
    pairs: list[Figure]
    alpha: float | None
    alpha_items: int  # items labelled by two raters or more
    reviewers: list[RaterStats] = field(default_factory=list)
    computing: bool = False  # the oracle counts in place: never
    refresh_failed: None = None  # nor fails in the background


def candidate_runs(dataset: Dataset) -> list[Run]:
    """Runs whose verdicts can be compared with human labels, newest first."""
    return list(
        dataset.runs.exclude(kind=Run.Kind.CROSS_EVALUATION)
        .select_related("panel")
        .order_by("-created_at", "-id")[:50]
    )


def choose_run(dataset: Dataset, run_id: int | None, runs: list[Run]) -> Run | None:
    """The run asked for (it must belong to the dataset: Run.DoesNotExist otherwise), else
    the latest finished one."""
    if run_id is not None:
        found = next((r for r in runs if r.pk == run_id), None)
        if found is None:
            found = (
                dataset.runs.exclude(kind=Run.Kind.CROSS_EVALUATION)
                .select_related("panel")
                .get(pk=run_id)
            )
        return found
    done = [r for r in runs if r.status in (Run.Status.DONE, Run.Status.DONE_WITH_ERRORS)]
    return max(done, key=lambda r: (r.finished_at or r.created_at, r.pk), default=None)


def load_items(dataset: Dataset, run: Run | None) -> list[Item]:
    """Every labelled or adjudicated item of the dataset with the run's votes on it.
    Six queries (seven with a run)."""
    labels: dict[tuple[int, int], dict[str, str]] = defaultdict(dict)
    for answer_id, criterion_id, rater, label in HumanLabel.objects.filter(
        answer__query__dataset=dataset
    ).values_list("answer_id", "criterion_id", "rater", "label"):
        labels[answer_id, criterion_id][rater] = label
    adjudications = {
        (a, c): label
        for a, c, label in Adjudication.objects.filter(answer__query__dataset=dataset).values_list(
            "answer_id", "criterion_id", "label"
        )
    }
    keys = set(labels) | set(adjudications)
    votes: dict[tuple[int, int], list[tuple[str, int, str]]] = defaultdict(list)
    if run is not None and keys:
        labelled_answers = Answer.objects.filter(
            Q(query__dataset=dataset)
            & (Q(human_labels__isnull=False) | Q(adjudications__isnull=False))
        ).values("pk")
        for answer_id, criterion_id, judge, sample, outcome in Verdict.objects.filter(
            run=run, answer_id__in=labelled_answers
        ).values_list("answer_id", "criterion_id", "judge__name", "sample", "outcome"):
            if (answer_id, criterion_id) in keys:
                votes[answer_id, criterion_id].append((judge, sample, outcome))
    criteria = {
        pk: (kind, query_id, category)
        for pk, kind, query_id, category in Criterion.objects.filter(
            checklist__query__dataset=dataset
        ).values_list("pk", "kind", "checklist__query_id", "checklist__query__category__name")
    }
    sources: dict[int, list[str]] = defaultdict(list)
    for criterion_id, name in Criterion.source_types.through.objects.filter(
        criterion__checklist__query__dataset=dataset
    ).values_list("criterion_id", "sourcetype__name"):
        sources[criterion_id].append(name)
    systems = dict(Answer.objects.filter(query__dataset=dataset).values_list("pk", "system__name"))
    method = run.panel_method if run else Method.MAJORITY
    threshold = run.panel_threshold if run else 0.5
    items = []
    for answer_id, criterion_id in sorted(keys):
        if criterion_id not in criteria or answer_id not in systems:
            continue  # a label on a criterion of another dataset's query cannot happen; skip
        kind, query_id, category = criteria[criterion_id]
        own_labels = labels.get((answer_id, criterion_id), {})
        adjudication = adjudications.get((answer_id, criterion_id))
        if adjudication is not None:
            human, basis = adjudication, "adjudication"
        elif own_labels:
            human = majority(own_labels.values())
            basis = "majority" if human is not None else "tie"
        else:
            human, basis = None, "none"
        item_votes = votes.get((answer_id, criterion_id), [])
        items.append(
            Item(
                answer_id=answer_id,
                criterion_id=criterion_id,
                query_id=query_id,
                system=systems[answer_id],
                kind=kind,
                source_types=tuple(sorted(sources.get(criterion_id, ()))) or (NO_VALUE,),
                category=category or NO_VALUE,
                labels=own_labels,
                adjudication=adjudication,
                human=human,
                basis=basis,
                judges=_judge_labels(item_votes),
                panel=_panel(item_votes, method, threshold),
                invalid=sum(1 for *_, outcome in item_votes if outcome in INVALID_OUTCOMES),
            )
        )
    return items


def _judge_labels(votes: list[tuple[str, int, str]]) -> dict[str, str | None]:
    per_judge: dict[str, list[Vote]] = defaultdict(list)
    for judge, sample, outcome in votes:
        per_judge[judge].append(Vote(judge, sample, outcome))
    result: dict[str, str | None] = {}
    for judge, judge_votes in per_judge.items():
        outcome = aggregate(judge_votes, Method.MAJORITY).outcome
        result[judge] = outcome if outcome in PASS_FAIL else None
    return result


def _panel(votes: list[tuple[str, int, str]], method: str, threshold: float) -> str | None:
    if not votes:
        return None
    return aggregate(
        [Vote(judge, sample, outcome) for judge, sample, outcome in votes],
        method,
        threshold=threshold,
    ).outcome


def figure_pairs(items: Iterable[Item], key: FigureKey) -> list[tuple[Item, str, str]]:
    """The items behind a figure, each with the two labels compared (first, second).

    Judge vs human: (judge or panel label, human reference). Rater pairs: (key.value's
    label, key.other's label). A rater against the judges: (panel, rater); against the
    other raters: (majority of the others, rater).
    """
    figure, value, other = key.figure, key.value, key.other
    result = []
    for item in items:
        if figure in JUDGE_VS_HUMAN:
            if item.human is None or not _in_group(item, figure, value):
                continue
            first = item.judges.get(value) if figure == "judge" else item.panel
            second = item.human
        elif figure == "pair":
            first, second = item.labels.get(value), item.labels.get(other)
        elif figure == "rater-judges":
            first, second = item.panel, item.labels.get(value)
        else:  # rater-others
            second = item.labels.get(value)
            first = majority(label for rater, label in item.labels.items() if rater != value)
        if first in PASS_FAIL and second in PASS_FAIL:
            result.append((item, first, second))
    return result


def _in_group(item: Item, figure: str, value: str) -> bool:
    if figure == "kind":
        return item.kind == value
    if figure == "source":
        return value in item.source_types
    if figure == "category":
        return item.category == value
    if figure == "system":
        return item.system == value
    return True  # panel (overall) and judge


def figure(items: list[Item], key: FigureKey, label: str) -> Figure:
    pairs = figure_pairs(items, key)
    return Figure(key, label, compare((a, b) for _, a, b in pairs))


def agreement_report(dataset: Dataset, run_id: int | None = None) -> AgreementReport:
    """Every figure of the dataset's agreement page. Raises Run.DoesNotExist for a run
    that is not the dataset's."""
    runs = candidate_runs(dataset)
    run = choose_run(dataset, run_id, runs)
    items = load_items(dataset, run)
    kind_labels = dict(Criterion.Kind.choices)
    referenced = [i for i in items if i.human is not None]

    def group(name: str, values: Iterable[str], labels: Mapping[str, str] | None = None):
        return [
            figure(items, FigureKey(name, v), (labels or {}).get(v, v))
            for v in sorted(set(values), key=lambda v: (v == NO_VALUE, v))
        ]

    judges = sorted({j for i in items for j in i.judges})
    raters = sorted({r for i in items for r in i.labels})
    ratings = {r: {} for r in raters}
    for item in items:
        for rater, label in item.labels.items():
            ratings[rater][item.answer_id, item.criterion_id] = label
    kinds_order = [k for k in kind_labels if any(i.kind == k for i in items)]
    return AgreementReport(
        dataset=dataset,
        run=run,
        runs=runs,
        counts=Counts(
            items=len(items),
            adjudicated=sum(1 for i in items if i.adjudication is not None),
            human_ties=sum(1 for i in items if i.basis == "tie"),
            without_votes=sum(1 for i in referenced if i.panel is None),
            panel_undecided=sum(1 for i in referenced if i.panel == "undecided"),
            invalid_votes=sum(i.invalid for i in items),
        ),
        overall=figure(items, FigureKey("panel"), run.panel.name if run else "Panel"),
        judges=[figure(items, FigureKey("judge", j), j) for j in judges],
        kinds=[figure(items, FigureKey("kind", k), kind_labels[k]) for k in kinds_order],
        sources=group("source", (s for i in items for s in i.source_types)),
        categories=group("category", (i.category for i in items)),
        systems=group("system", (i.system for i in items)),
        raters=raters,
        pairs=[
            figure(items, FigureKey("pair", a, b), f"{a} – {b}")
            for n, a in enumerate(raters)
            for b in raters[n + 1 :]
        ],
        alpha=alpha_over_raters(ratings),
        alpha_items=sum(1 for i in items if len(i.labels) >= 2),
        reviewers=_reviewers(dataset, items, raters),
    )


def _reviewers(dataset: Dataset, items: list[Item], raters: list[str]) -> list[RaterStats]:
    days: dict[str, Counter[date]] = defaultdict(Counter)
    for rater, created in HumanLabel.objects.filter(answer__query__dataset=dataset).values_list(
        "rater", "created_at"
    ):
        days[rater][timezone.localdate(created)] += 1
    result = []
    for rater in raters:
        per_day = days[rater]
        total = sum(per_day.values())
        result.append(
            RaterStats(
                rater=rater,
                labels=total,
                days=len(per_day),
                per_day=total / len(per_day) if per_day else None,
                first=min(per_day, default=None),
                last=max(per_day, default=None),
                with_judges=figure(items, FigureKey("rater-judges", rater), rater),
                with_others=figure(items, FigureKey("rater-others", rater), rater),
            )
        )
    return result


def drill_down(
    dataset: Dataset, run_id: int | None, key: FigureKey, cell: tuple[str, str] | None = None
) -> tuple[Run | None, list[tuple[Item, str, str]]]:
    """The items behind one figure (optionally one confusion-matrix cell: first, second)."""
    run = choose_run(dataset, run_id, candidate_runs(dataset))
    pairs = figure_pairs(load_items(dataset, run), key)
    if cell is not None:
        pairs = [p for p in pairs if (p[1], p[2]) == cell]
    return run, pairs
