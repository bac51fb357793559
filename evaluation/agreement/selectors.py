"""Agreement figures of one dataset: judge vs human, human vs human, per reviewer.

An *item* is one (answer, criterion) that has a human label or an adjudication. The
figures are counted in the database (evaluation.agreement.cells: one statement returns the
confusion-matrix cells of every figure) and the statistics computed from those counts, so
the cost in Python does not grow with the number of items, systems or judges. The
drill-down lists the items behind a figure from the same item definition with the same
figure conditions (`figure_where`), a page at a time in (answer, criterion) order.

Choices (documented in docs/metrics.md#agreement):
- The run: the one asked for, else, among the dataset's finished runs (done, or done with
  errors) that grade system answers or hold imported verdicts (cross-evaluation runs
  grade perfect answers, which no figure here compares), the one that graded the most
  labelled answers, the latest among equals (`default_run`): a team labelling the answers
  of one run is not shown a later run of other answers, where none of its labels counts.
  Human-vs-human figures do not depend on the run.
- The human reference of an item: its adjudication if there is one, else the majority of
  its human labels; a tie leaves the item out of judge-vs-human figures (counted).
- A judge's label on an item: the majority of its valid samples (one label per item and
  judge, like a human's); a tie between samples leaves the item out of that judge's
  figure. The panel's label: the run panel's aggregated verdict (its own method).
- Only pass and fail votes count: unparseable and errored votes are excluded and counted.
"""

# SQL text here is built from this module's constants; every value is a query parameter.
# ruff: noqa: S608

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from urllib.parse import urlencode

from django.db.models import Count, Exists, OuterRef, Q, QuerySet

from annotation.models import Criterion, Dataset
from evaluation.agreement import cells as sql
from evaluation.agreement import kept
from evaluation.agreement.cells import NO_VALUE, Cell
from evaluation.answers.models import Answer
from evaluation.kept import refresh
from evaluation.labels.models import Adjudication, HumanLabel
from evaluation.metrics import votes_sql
from evaluation.metrics.agreement import (
    PASS_FAIL,
    Agreement,
    agreement_from_matrix,
    krippendorff_alpha_counted,
    matrix_from_counts,
)
from evaluation.runs.models import Run, Verdict
from evaluation.runs.selectors import choose_run, runs_of_system_answers

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
    # Labelled items the run's judges were shown as worked examples: left out of every
    # figure of the run (evaluation.judges.tuning).
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
    # The run's counts were cold: counted in the background (evaluation.kept.cold), every
    # figure empty until then; the page says "computing".
    computing: bool = False
    # Computing, and the last try of that count failed: when the next one starts.
    refresh_failed: refresh.Failure | None = None


def _agreement(counts: Mapping[tuple[str, str], int]) -> Agreement:
    return agreement_from_matrix(matrix_from_counts(counts, PASS_FAIL))


class Cells:
    """The counted cells, by figure and group, with only pass/fail pairs kept as cells."""

    def __init__(self, rows: list[Cell]) -> None:
        self.groups: dict[str, set[str]] = defaultdict(set)
        self.matrix: dict[tuple[str, str, str], dict[tuple[str, str], int]] = defaultdict(dict)
        self.counts: dict[str, int] = {}
        self.alpha: list[tuple[dict[str, int], int]] = []
        self.rater_labels: dict[str, int] = {}
        self.days: list[tuple[str, date, int]] = []
        for row in rows:
            if row.figure == "count":
                self.counts[row.value] = row.n
            elif row.figure == "alpha":
                self.alpha.append(({"pass": int(row.value), "fail": int(row.other)}, row.n))
            elif row.figure == "rater":
                self.rater_labels[row.value] = row.n
            elif row.figure == "day":
                self.days.append((row.value, date.fromisoformat(row.other), row.n))
            else:
                self.groups[row.figure].add(row.value)
                if row.first in PASS_FAIL and row.second in PASS_FAIL:
                    cell = self.matrix[row.figure, row.value, row.other]
                    cell[row.first, row.second] = cell.get((row.first, row.second), 0) + row.n

    def figure(self, key: FigureKey, label: str) -> Figure:
        return Figure(key, label, _agreement(self.matrix.get((key.figure, key.value, key.other),
                                                             {})))  # fmt: skip


def _labelled_answers(dataset: Dataset) -> QuerySet[Answer]:
    """The dataset's answers with a human label or an adjudication."""
    answer = OuterRef("pk")
    return Answer.objects.filter(query__dataset=dataset).filter(
        Exists(HumanLabel.objects.filter(answer=answer))
        | Exists(Adjudication.objects.filter(answer=answer))
    )


def labelled_overlap(dataset: Dataset, runs: list[Run]) -> dict[int, int]:
    """For each run, how many of the dataset's labelled answers it graded (one query: an
    index probe per labelled answer and run). Answers, not items: a run grades every
    criterion of the answers it covers, and counting answers keeps this cheap."""
    if not runs:
        return {}
    found = _labelled_answers(dataset).aggregate(**{f"run_{r.pk}": _graded(r) for r in runs})
    return {r.pk: found[f"run_{r.pk}"] or 0 for r in runs}


def _graded(run: Run) -> Count:
    """Of the answers counted, those the run graded: an index probe per answer."""
    return Count(
        "pk", filter=Q(Exists(Verdict.objects.filter(run_id=run.pk, answer=OuterRef("pk"))))
    )


def default_run(dataset: Dataset, runs: list[Run]) -> Run | None:
    """The run the page opens on: of the finished `runs`, the one that graded the most
    labelled answers, the latest among equals (the latest finished when nothing is
    labelled); None without a finished run. The overlap is counted only when there are
    two finished runs to choose from, and kept until a run ends, an answer is labelled for
    the first time, or a verdict or adjudication changes (agreement.kept.default_run)."""
    # Not an archived run: its verdicts are in its Parquet file (evaluation.archive).
    finished = [r for r in runs if r.status in Run.FINISHED and r.archived_at is None]
    if len(finished) < 2:
        return choose_run(dataset, None, runs)
    labelled = list(_labelled_answers(dataset).order_by("pk").values_list("pk", flat=True))
    return kept.default_run(
        dataset.pk, finished, labelled, lambda: _most_labelled(dataset, finished, len(labelled))
    )


def _most_labelled(dataset: Dataset, finished: list[Run], labelled: int) -> Run:
    """Of the `finished` runs, the one that graded the most of the `labelled` answers (how
    many there are), the latest among equals."""

    def latest(r: Run):
        return (r.finished_at or r.created_at, r.pk)

    # The latest run that graded every labelled answer wins whatever the others graded
    # (none can grade more): one query where nightly runs grade the same answers, instead
    # of an index probe per labelled answer for each of a month of runs (2.6 s at 30 runs
    # of 720,000 verdicts).
    newest = max(finished, key=latest)
    if _labelled_answers(dataset).aggregate(graded=_graded(newest))["graded"] == labelled:
        return newest
    overlap = labelled_overlap(dataset, finished)
    return max(finished, key=lambda r: (overlap[r.pk], *latest(r)))


def _run(dataset: Dataset, run_id: int | None, runs: list[Run]) -> Run | None:
    """The run asked for (Run.DoesNotExist unless it is the dataset's), else the default."""
    if run_id is not None:
        return choose_run(dataset, run_id, runs)
    return default_run(dataset, runs)


@dataclass(frozen=True)
class OverlapHint:
    """Why no labelled item is compared with the run, and where they could be."""

    best: Run | None  # the finished run that graded the most labelled answers, if any did
    best_answers: int  # how many labelled answers it graded
    perfect: int  # labelled perfect answers (cross-evaluation), which no run here grades


def overlap_hint(dataset: Dataset, run: Run, runs: list[Run]) -> OverlapHint:
    """For a run that graded none of the labelled items (two queries): the finished run
    that graded the most labelled answers, and how many labelled answers are perfect
    answers of cross-evaluation."""
    finished = [r for r in runs if r.status in Run.FINISHED and r.pk != run.pk]
    overlap = labelled_overlap(dataset, finished)
    best = max(finished, key=lambda r: (overlap[r.pk], r.finished_at or r.created_at, r.pk),
               default=None)  # fmt: skip
    perfect = _labelled_answers(dataset).filter(checklist__isnull=False).count()
    if best is None or overlap[best.pk] == 0:
        return OverlapHint(None, 0, perfect)
    return OverlapHint(best, overlap[best.pk], perfect)


def agreement_report(dataset: Dataset, run_id: int | None = None) -> AgreementReport:
    """Every figure of the dataset's agreement page. Raises Run.DoesNotExist for a run
    that is not the dataset's. The counts are those kept for the dataset's state, or counted
    (one statement for the figures, one for the raters' days) and kept
    (evaluation.agreement.kept); a run's cold counts are counted in the background, and the
    report is empty and `computing` meanwhile."""
    runs = runs_of_system_answers(dataset)
    run = _run(dataset, run_id, runs)
    counted = kept.cells(dataset, run)
    found = Cells(counted or [])
    kind_labels = dict(Criterion.Kind.choices)

    def group(name: str, labels: Mapping[str, str] | None = None) -> list[Figure]:
        values = sorted(found.groups.get(name, ()), key=lambda v: (v == NO_VALUE, v))
        return [found.figure(FigureKey(name, v), (labels or {}).get(v, v)) for v in values]

    judges = sorted(found.groups.get("judge", ()))
    raters = sorted(found.rater_labels)
    kinds_order = [k for k in kind_labels if k in found.groups.get("kind", ())]
    counts = found.counts
    return AgreementReport(
        dataset=dataset,
        run=run,
        runs=runs,
        counts=Counts(
            items=counts.get("items", 0),
            adjudicated=counts.get("adjudicated", 0),
            human_ties=counts.get("human_ties", 0),
            without_votes=counts.get("without_votes", 0),
            panel_undecided=counts.get("panel_undecided", 0),
            invalid_votes=counts.get("invalid_votes", 0),
            excluded=counts.get("excluded", 0),
        ),
        overall=found.figure(FigureKey("panel"), run.panel.name if run else "Panel"),
        judges=[found.figure(FigureKey("judge", j), j) for j in judges],
        kinds=[found.figure(FigureKey("kind", k), kind_labels[k]) for k in kinds_order],
        sources=group("source"),
        categories=group("category"),
        systems=group("system"),
        raters=raters,
        pairs=[
            found.figure(FigureKey("pair", a, b), f"{a} – {b}")
            for n, a in enumerate(raters)
            for b in raters[n + 1 :]
        ],
        alpha=krippendorff_alpha_counted(found.alpha),
        alpha_items=counts.get("alpha_items", 0),
        reviewers=_reviewers(dataset, found, raters),
        computing=counted is None,
        refresh_failed=(
            refresh.failure(dataset.pk, run.pk if run else None, kept.REFRESH_GROUP)
            if counted is None
            else None
        ),
    )


def _reviewers(dataset: Dataset, found: Cells, raters: list[str]) -> list[RaterStats]:
    days: dict[str, dict[date, int]] = defaultdict(dict)
    for rater, day, n in found.days:
        days[rater][day] = days[rater].get(day, 0) + n
    result = []
    for rater in raters:
        own = days[rater]
        total = sum(own.values())
        result.append(
            RaterStats(
                rater=rater,
                labels=total,
                days=len(own),
                per_day=total / len(own) if own else None,
                first=min(own, default=None),
                last=max(own, default=None),
                with_judges=found.figure(FigureKey("rater-judges", rater), rater),
                with_others=found.figure(FigureKey("rater-others", rater), rater),
            )
        )
    return result


# --- drill-down -----------------------------------------------------------------------------


def figure_where(key: FigureKey, cell: tuple[str, str] | None) -> tuple[str, dict]:
    """The SQL condition (over the `item` CTE as `i`) selecting a figure's items, and the
    expressions of its two compared labels: the same conditions the counts use."""
    params: dict = {"value": key.value, "other": key.other}
    judge = votes_sql.majority_label("jv.p", "jv.f")
    labels_of = (
        "(SELECT h.label FROM hl h WHERE h.answer_id = i.answer_id "
        "AND h.criterion_id = i.criterion_id AND h.rater = %({name})s)"
    )
    if key.figure == "judge":
        first = (
            f"(SELECT {judge} FROM jv JOIN evaluation_judge j ON j.id = jv.judge_id "
            "WHERE jv.answer_id = i.answer_id AND jv.criterion_id = i.criterion_id "
            "AND j.name = %(value)s)"
        )
        second = "i.human"
    elif key.figure in JUDGE_VS_HUMAN:
        first, second = "i.panel", "i.human"
    elif key.figure == "pair":
        first = labels_of.format(name="value")
        second = labels_of.format(name="other")
    elif key.figure == "rater-judges":
        first, second = "i.panel", labels_of.format(name="value")
    else:  # rater-others
        own = labels_of.format(name="value")
        others_p = f"(i.lp - CASE WHEN {own} = 'pass' THEN 1 ELSE 0 END)"
        others_f = f"(i.lf - CASE WHEN {own} = 'fail' THEN 1 ELSE 0 END)"
        first = votes_sql.majority_label(others_p, others_f)
        second = own
    conditions = [f"{first} IN ('pass', 'fail')", f"{second} IN ('pass', 'fail')"]
    if key.figure == "kind":
        conditions.append("i.kind = %(value)s")
    elif key.figure == "category":
        conditions.append("i.category = %(value)s")
    elif key.figure == "system":
        conditions.append("i.system = %(value)s")
    elif key.figure == "source":
        if key.value == NO_VALUE:
            conditions.append(
                "NOT EXISTS (SELECT 1 FROM annotation_criterion_source_types cs "
                "WHERE cs.criterion_id = i.criterion_id)"
            )
        else:
            conditions.append(
                "EXISTS (SELECT 1 FROM annotation_criterion_source_types cs "
                "JOIN annotation_sourcetype st ON st.id = cs.sourcetype_id "
                "WHERE cs.criterion_id = i.criterion_id AND st.name = %(value)s)"
            )
    if cell is not None:
        conditions.append(f"{first} = %(cell_first)s AND {second} = %(cell_second)s")
        params.update(cell_first=cell[0], cell_second=cell[1])
    return " AND ".join(f"({c})" for c in conditions), params


@dataclass(frozen=True)
class DrillDown:
    run: Run | None
    pairs: list[tuple[Item, str, str]]  # (item, first label, second label), a page of them
    next_after: tuple[int, int] | None  # the keyset of the next page; None on the last one


# The drill-down derives the items of a window of answers at a time (about WINDOW answers'
# labelled items), and at most WINDOWS windows per page: a page never costs the whole
# dataset. A figure whose items are sparse may fill a page only partly; its "next page"
# then continues where the scan stopped.
WINDOW = 100
WINDOWS = 10
_END = 2**62  # a criterion id above any: "after every criterion of this answer"


def drill_down(
    dataset: Dataset,
    run_id: int | None,
    key: FigureKey,
    cell: tuple[str, str] | None = None,
    *,
    after: tuple[int, int] | None = None,
    limit: int = 100,
) -> DrillDown:
    """A page of the items behind one figure (optionally one confusion-matrix cell: first,
    second), in (answer, criterion) order after `after`."""
    run = _run(dataset, run_id, runs_of_system_answers(dataset))
    method, threshold = kept.run_method(run)
    excluded = kept.excluded_of(run)
    where, params = figure_where(key, cell)
    answers = Answer.objects.filter(query__dataset=dataset).order_by("pk")
    position = after or (0, 0)
    rows: list[sql.ItemRow] = []
    next_after: tuple[int, int] | None = None
    for _ in range(WINDOWS):
        window = list(
            answers.filter(pk__gte=position[0]).values_list("pk", flat=True)[: WINDOW + 1]
        )
        if not window:
            break
        until = window[-1]
        rows += sql.item_rows(
            dataset.pk, run.pk if run else None, method=method, threshold=threshold,
            where=where, params=params, after=position, until_answer=until,
            limit=limit + 1 - len(rows), excluded=excluded,
        )  # fmt: skip
        if len(rows) > limit:
            rows = rows[:limit]
            next_after = (rows[-1].answer_id, rows[-1].criterion_id)
            break
        position = (until, _END)
        if len(window) <= WINDOW:  # the last answers of the dataset
            break
    else:
        next_after = position  # the scan budget is spent: go on from here
    keys = [(r.answer_id, r.criterion_id) for r in rows]
    labels, judges = _details(run, keys)
    items = []
    for r in rows:
        own = labels.get((r.answer_id, r.criterion_id), {})
        basis = (
            "adjudication"
            if r.adjudication is not None
            else ("majority" if r.human is not None else ("tie" if own else "none"))
        )
        items.append(
            Item(
                answer_id=r.answer_id, criterion_id=r.criterion_id, query_id=r.query_id,
                system=r.system, kind=r.kind, source_types=(), category=r.category,
                labels=own, adjudication=r.adjudication, human=r.human, basis=basis,
                judges=judges.get((r.answer_id, r.criterion_id), {}), panel=r.panel,
                invalid=r.invalid,
            )
        )  # fmt: skip
    pairs = [(item, *_compared_labels(item, key)) for item in items]
    return DrillDown(run, pairs, next_after)


def _details(
    run: Run | None, keys: list[tuple[int, int]]
) -> tuple[dict[tuple[int, int], dict[str, str]], dict[tuple[int, int], dict[str, str | None]]]:
    """The labels and each judge's label of a page of items (two queries)."""
    labels: dict[tuple[int, int], dict[str, str]] = defaultdict(dict)
    judges: dict[tuple[int, int], dict[str, str | None]] = defaultdict(dict)
    if not keys:
        return labels, judges
    answers = {a for a, _ in keys}
    wanted = set(keys)
    for a, c, rater, label in HumanLabel.objects.filter(answer_id__in=answers).values_list(
        "answer_id", "criterion_id", "rater", "label"
    ):
        if (a, c) in wanted:
            labels[a, c][rater] = label
    if run is not None:
        votes: dict[tuple[int, int, str], list[int]] = defaultdict(lambda: [0, 0])
        for a, c, judge, outcome in Verdict.objects.filter(
            run=run, answer_id__in=answers
        ).values_list("answer_id", "criterion_id", "judge__name", "outcome"):
            if (a, c) not in wanted:
                continue
            counted = votes[a, c, judge]
            if outcome == "pass":
                counted[0] += 1
            elif outcome == "fail":
                counted[1] += 1
        for (a, c, judge), (p, f) in votes.items():
            judges[a, c][judge] = "pass" if p > f else ("fail" if f > p else None)
    return labels, judges


def _compared_labels(item: Item, key: FigureKey) -> tuple[str, str]:
    figure, value, other = key.figure, key.value, key.other
    if figure == "judge":
        return item.judges.get(value) or "", item.human or ""
    if figure in JUDGE_VS_HUMAN:
        return item.panel or "", item.human or ""
    if figure == "pair":
        return item.labels.get(value, ""), item.labels.get(other, "")
    if figure == "rater-judges":
        return item.panel or "", item.labels.get(value, "")
    others = [label for rater, label in item.labels.items() if rater != value]
    p, f = others.count("pass"), others.count("fail")
    return ("pass" if p > f else "fail" if f > p else ""), item.labels.get(value, "")
