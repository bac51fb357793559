"""The loaded run (`RunData`, filled by `evaluation.analytics.selectors.load_run`) and every
figure computed from it: system scores with intervals by group, PPI++, the complexity
curve, run comparison, criterion health, judge agreement, saturated queries. Plain Python
over the loaded counts, no query: what a figure needs from the database beyond the run
(the labelling design, the human reference line) is an argument, fetched by the selector
of the same name. Tested without a database (tests/domain/test_analytics_summaries.py).

Definitions: docs/metrics.md, "Analytics".
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, NamedTuple

from evaluation.metrics import analytics as am
from evaluation.metrics import rubrics
from evaluation.metrics.agreement import Agreement, agreement_from_matrix, matrix_from_counts
from evaluation.metrics.calibration import CalibrationItem
from evaluation.metrics.overlap import Interval
from evaluation.review import sampling

if TYPE_CHECKING:  # the loaded run carries its model instance; nothing here queries it
    from evaluation.runs.models import Run

NO_VALUE = "(none)"
Counted = dict[str | None, rubrics.GroupCounts]  # a checklist's counts per group key


# Pages draw fewer resamples than the domain default: a system × group grid of intervals
# is drawn on every request, and 1,000 percentile resamples are stable to about 0.005.
PAGE_RESAMPLES = 1000


GROUPS = ("category", "bucket", "kind", "source", "group")
# A query dimension's cells: group "dimension:<name>", value the query's value (NO_VALUE
# when it has none); the complexity curve by a numeric dimension: "bucket:<name>".
DIMENSION, DIMENSION_BUCKET = "dimension:", "bucket:"


@dataclass(frozen=True)
class AnswerInfo:
    answer_id: int
    query_id: int
    system_id: int
    system: str
    category: str
    # The query's values on the dataset's dimensions, as (name, value) pairs.
    dimensions: tuple[tuple[str, str], ...] = ()


class Item(NamedTuple):
    """One labelled (answer, criterion) of the run: only the items with a human reference
    are read one by one (judge calibration needs item-level pairs); every other figure
    comes from counts aggregated in SQL."""

    answer_id: int
    criterion_id: int
    checklist_id: int
    kind: str
    panel: str  # pass / fail / undecided: the run's panel, its own method
    outcome: str  # decided: the adjudication where there is one, else the panel
    adjudicated: bool
    split: bool  # the valid votes disagreed
    human: str | None  # adjudication, else the majority of human labels; None: none or tie


class PanelCounts(NamedTuple):
    """One answer's items with a panel verdict (pass or fail), for PPI++: how many the panel
    passed, and the labelled ones by (human, panel): hp = human pass, panel pass, etc."""

    answer_id: int
    judged: int
    panel_passed: int
    pp: int
    pf: int
    fp: int
    ff: int


@dataclass
class RunData:
    run: Run
    answers: dict[int, AnswerInfo]
    # (answer, checklist, kind, passed, decided, items): the items of one (answer,
    # checklist, criterion kind) counted (passed / decided: decided outcome pass / pass or
    # fail). Plain tuples: tens of thousands per run.
    groups: list[tuple[int, int, str, int, int, int]]
    # (answer, checklist, source type, passed, decided) over decided items: an item whose
    # criterion has several source types counts in each, one with none under None.
    source_groups: list[tuple[int, int, str | None, int, int]]
    panel_counts: list[PanelCounts]
    sources: dict[int, tuple[str, ...]]  # labelled items' criteria -> source type names
    checklist_size: dict[int, int]  # scored criteria graded in the run
    buckets: tuple[am.Bucket, ...]
    item_count: int
    adjudicated: int
    labelled: int
    # Loaded when asked for (`parts`): None otherwise.
    labelled_items: list[Item] | None = None
    calibration: dict[tuple[int, int], CalibrationItem] | None = None
    health: list[am.CriterionItems] | None = None
    # (answer, group, value) -> score: computed once, used by every figure of a page.
    shares: dict[tuple[int, str, str], float] | None = None
    overall: list[tuple[int, float]] | None = None  # (answer, its overall score), in order
    # What the scoring strategies read (evaluation.metrics.rubrics): per (answer,
    # checklist), the groups' counts by criterion kind and by source type; each
    # checklist's strategy and tree. Left out (tests that build a run by hand), they are
    # derived from `groups` and `source_groups`: every checklist scored by its share.
    rubric: dict[tuple[int, int], dict[str, Counted]] | None = None
    rubric_sources: dict[tuple[int, int], dict[str, Counted]] | None = None
    scorings: dict[int, str] = field(default_factory=dict)
    undecided_as: dict[int, str] = field(default_factory=dict)  # excluded when left out
    trees: dict[int, rubrics.Tree] = field(default_factory=dict)
    blend_weight: float = rubrics.DEFAULT_BLEND_WEIGHT
    dimensions: dict[str, list[str]] = field(default_factory=dict)  # the dataset's declared
    # answer -> (its value under the panel, under the human reference when every item of
    # it has one): PPI++ on the strategies' scale. None: every score is on the item scale
    # (each checklist scored by its share, no penalty), and PPI++ is drawn over items.
    answer_values: dict[int, tuple[float | None, float | None]] | None = None
    # (answer, checklist) -> its value under its strategy: computed once (`values`).
    checklist_values: dict[tuple[int, int], float | None] | None = None


@dataclass(frozen=True)
class Cell:
    """One system in one group."""

    system_id: int
    system: str
    group: str  # "all", "category", "bucket", "kind", "source"
    value: str  # the group's value ("" for all)
    estimate: am.Estimate

    def as_dict(self) -> dict:
        return {
            "system_id": self.system_id,
            "system": self.system,
            "group": self.group,
            "value": self.value,
            **self.estimate.as_dict(),
        }


def _answer_group_shares(data: RunData) -> dict[tuple[int, str, str], float]:
    """(answer, group, value) -> the answer's score in that group: the mean over its
    checklists of the share of the group's decided criteria passed."""
    if data.shares is None:
        data.shares = _compute_shares(data)
    return data.shares


def _as_counts(passed: int, decided: int, undecided: int = 0) -> rubrics.GroupCounts:
    """Counts of criteria of weight 1 (`RunData.rubric` left out)."""
    return rubrics.GroupCounts(
        passed, decided - passed, undecided, passed, decided, passed, 0.0, decided,
        weight_undecided=undecided, points_undecided=undecided,
    )  # fmt: skip


def _rubric(data: RunData) -> tuple[dict, dict]:
    """`data.rubric` and `data.rubric_sources`, derived from the plain counts when left out."""
    if data.rubric is None:
        data.rubric = {}
        for a, c, kind, passed, decided, items in data.groups:
            data.rubric.setdefault((a, c), {})[kind] = {
                None: _as_counts(passed, decided, items - decided)
            }
    if data.rubric_sources is None:
        data.rubric_sources = {}
        for a, c, source, passed, decided in data.source_groups:
            by_source = data.rubric_sources.setdefault((a, c), {})
            by_source[source or NO_VALUE] = {None: _as_counts(passed, decided)}
    return data.rubric, data.rubric_sources


def _merged(by_part: dict[str, dict[str | None, rubrics.GroupCounts]]):
    """One checklist's counts per group, summed over kinds."""
    if len(by_part) == 1:
        return next(iter(by_part.values()))
    merged: dict[str | None, rubrics.GroupCounts] = {}
    for counts in by_part.values():
        for key, counted in counts.items():
            merged.setdefault(key, rubrics.GroupCounts()).add(counted)
    return merged


def _scorer(data: RunData):
    def score(c: int, counts: dict[str | None, rubrics.GroupCounts]) -> float | None:
        return rubrics.value_counted(
            counts,
            data.trees.get(c, rubrics.EMPTY_TREE),
            data.scorings.get(c, rubrics.DEFAULT_STRATEGY),
            blend_weight=data.blend_weight,
            undecided=data.undecided_as.get(c, rubrics.DEFAULT_UNDECIDED),
        )

    return score


def values(data: RunData) -> dict[tuple[int, int], float | None]:
    """(answer, checklist) -> the checklist's value under its strategy (None: no decided
    criterion), for the run's answers, in (answer, checklist) order."""
    if data.checklist_values is None:
        rubric, _ = _rubric(data)
        score = _scorer(data)
        data.checklist_values = {
            (a, c): score(c, _merged(by_kind))
            for (a, c), by_kind in rubric.items()
            if a in data.answers
        }
    return data.checklist_values


def _compute_shares(data: RunData) -> dict[tuple[int, str, str], float]:
    # Answer by answer, checklists in order: each checklist's value under its strategy
    # (evaluation.metrics.rubrics), then their mean per group. A criterion kind's or a source
    # type's value is the strategy's on that kind's (type's) criteria alone, the tree's
    # other groups undecided; a top-level group's, the group's score under the strategy
    # (groups of the same title across a query's checklists count together). "all", the
    # answer's category and its values on the dimensions hold the same checklists; a group
    # counts a checklist only where it has a value (a decided criterion).
    rubric, rubric_sources = _rubric(data)
    checklist_values = values(data)
    score = _scorer(data)
    bucket_of = {c: am.bucket_of(n, data.buckets).key for c, n in data.checklist_size.items()}
    answers = data.answers
    ratios_of: dict[int, dict[tuple[str, str], list[float]]] = {}
    for (a, c), value in checklist_values.items():
        ratios = ratios_of.setdefault(a, defaultdict(list))
        if value is None:
            continue
        ratios["all", ""].append(value)
        ratios["bucket", bucket_of[c]].append(value)
        by_kind = rubric[a, c]
        for kind, counts in by_kind.items():
            v = value if len(by_kind) == 1 else score(c, counts)
            if v is not None:
                ratios["kind", kind].append(v)
        for source, counts in rubric_sources.get((a, c), {}).items():
            v = score(c, counts)
            if v is not None:
                ratios["source", source].append(v)
        tree = data.trees.get(c)
        if tree is not None and tree.tops:
            for group in _top_scores(data, c, by_kind, tree):
                if group.score is not None:
                    ratios["group", group.title].append(group.score)
    out: dict[tuple[int, str, str], float] = {}
    for a, ratios in ratios_of.items():
        if ("all", "") not in ratios:
            continue
        for (group, value), v in ratios.items():
            out[a, group, value] = sum(v) / len(v)
        overall = out[a, "all", ""]
        answer = answers[a]
        out[a, "category", answer.category] = overall
        named = dict(answer.dimensions)
        for name in data.dimensions:
            out[a, DIMENSION + name, named.get(name, NO_VALUE)] = overall
    return out


def _top_scores(data: RunData, c: int, by_kind: dict, tree: rubrics.Tree):
    scored = rubrics.score_counted(
        _merged(by_kind),
        tree,
        data.scorings.get(c, rubrics.DEFAULT_STRATEGY),
        blend_weight=data.blend_weight,
        undecided=data.undecided_as.get(c, rubrics.DEFAULT_UNDECIDED),
    )
    return [g for g in scored.groups if g.depth == 1]


def _overall_shares(data: RunData) -> dict[tuple[int, str, str], float]:
    """`_compute_shares` of the group "all" alone (the same sums in the same order)."""
    by_answer: dict[int, list[float]] = {}
    for (a, _), value in values(data).items():
        if value is not None:
            by_answer.setdefault(a, []).append(value)
    return {(a, "all", ""): sum(v) / len(v) for a, v in by_answer.items()}


def system_scores(data: RunData, *, resamples: int = PAGE_RESAMPLES) -> list[Cell]:
    """Each system's mean score per group (overall, bucket, kind, ...) with its interval
    over queries. A query counts once: the scores of its samples (a system answering it k
    times) are averaged first, then the queries (docs/metrics.md#a-query-counts-once); the
    estimate's `n` still counts the answers."""
    shares = _answer_group_shares(data)
    by_cell: dict[tuple[int, str, str], dict[int, list[float]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for (answer_id, group, value), share in shares.items():
        answer = data.answers[answer_id]
        by_cell[answer.system_id, group, value][answer.query_id].append(share)
    names = {a.system_id: a.system for a in data.answers.values()}
    order = {b.key: n for n, b in enumerate(data.buckets)}
    keys = list(by_cell)
    estimates = am.cluster_bootstraps(
        [am.query_means(by_cell[k]) for k in keys], resamples=resamples
    )
    cells = [
        Cell(system_id, names[system_id], group, value, replace(estimate, n=answers))
        for (system_id, group, value), estimate, answers in zip(
            keys, estimates, (sum(map(len, by_cell[k].values())) for k in keys), strict=True
        )
    ]
    return sorted(
        cells,
        key=lambda c: (
            c.system,
            c.system_id,
            *_group_order(c.group),
            order.get(c.value, 0) if c.group == "bucket" else 0,
            _number(c.value) is None if c.group.startswith(DIMENSION) else False,
            _number(c.value) or 0.0 if c.group.startswith(DIMENSION) else 0.0,
            c.value,
        ),
    )


def _group_order(group: str) -> tuple[int, str]:
    """The fixed groups first, then the dimensions by name."""
    if group.startswith(DIMENSION):
        return (len(GROUPS) + 1, group)
    return (("all", *GROUPS).index(group), "")


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if value == value and abs(value) != float("inf") else None


def numeric_dimensions(cells: Iterable[Cell]) -> list[str]:
    """The dimensions whose every value (but NO_VALUE) is a number: the complexity curve
    may use them instead of the criteria count, a point per value in numeric order."""
    seen: dict[str, bool] = {}
    for c in cells:
        if c.group.startswith(DIMENSION) and c.value != NO_VALUE:
            name = c.group[len(DIMENSION) :]
            seen[name] = seen.get(name, True) and _number(c.value) is not None
    return sorted(name for name, numeric in seen.items() if numeric)


@dataclass(frozen=True)
class ValuePoint:
    """A point of the complexity curve by a numeric dimension: one value (a Bucket's
    `key`, `label`, `low` and `high`, low = high = the value)."""

    key: str
    label: str
    low: float | None
    high: float | None


def dimension_curve(cells: Iterable[Cell], name: str, human: Interval) -> ComplexityCurve:
    """The complexity curve by dimension `name`: one point per value of it, in numeric
    order, from the dimension's cells (the system scores by that dimension)."""
    group = DIMENSION + name
    found = {(c.system_id, c.value): c for c in cells if c.group == group}
    numbers = sorted({v for _, v in found if _number(v) is not None}, key=_number)  # type: ignore[arg-type]
    points = tuple(ValuePoint(v, v, _number(v), _number(v)) for v in numbers)
    names = {c.system_id: c.system for c in cells}
    empty = am.Estimate(None, None, None, 0, 0, "")
    lines = tuple(
        CurveLine(
            system_id, names[system_id],
            tuple(CurvePoint(p, found[system_id, p.key].estimate  # type: ignore[arg-type]
                             if (system_id, p.key) in found else empty) for p in points),
        )
        for system_id in sorted(names, key=lambda s: (names[s], s))
    )  # fmt: skip
    return ComplexityCurve(points, lines, human, {}, dimension=name)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Calibrated:
    system_id: int
    system: str
    judge: am.Estimate  # panel verdicts on every item
    human: am.Estimate  # human references on the labelled items
    ppi: am.PPIEstimate
    labels_for_5_points: int | None  # labels for a ±0.05 interval, roughly

    def as_dict(self) -> dict:
        return {
            "system_id": self.system_id,
            "system": self.system,
            "judge_only": self.judge.as_dict(),
            "human_only": self.human.as_dict(),
            "ppi": self.ppi.as_dict(),
            "labels_for_5_points": self.labels_for_5_points,
        }


def calibrated_scores(
    data: RunData, design: sampling.Design | None, *, resamples: int = PAGE_RESAMPLES
) -> list[Calibrated]:
    """Per system, on the item scale (the share of (answer, criterion) items passed):
    judge-only, human-only and PPI++, each clustered by query. Under the "least certain"
    label policy the labelled answers were drawn with unequal chances
    (evaluation.review.sampling), so PPI++ weighs each by the inverse of its chance
    (`ppi_mean_weighted`); under the others they are a simple random draw (`ppi_mean`)."""
    if data.answer_values is not None:
        return _answer_calibrated(data, design, resamples)
    if design is not None:
        return _weighted_calibrated(data, design, resamples)
    # Rebuilt from each answer's counts: items with the same query, prediction and label
    # are interchangeable in every sum (one shared tuple per kind, repeated).
    by_system: dict[int, list[am.PPIItem]] = defaultdict(list)
    for c in data.panel_counts:
        answer = data.answers.get(c.answer_id)
        if answer is None:
            continue
        q = answer.query_id
        labelled_passed = c.pp + c.fp  # labelled items the panel passed
        unlabelled = c.judged - (c.pp + c.pf + c.fp + c.ff)
        unlabelled_passed = c.panel_passed - labelled_passed
        items = by_system[answer.system_id]
        items += [am.PPIItem(q, 1.0, None)] * unlabelled_passed
        items += [am.PPIItem(q, 0.0, None)] * (unlabelled - unlabelled_passed)
        items += [am.PPIItem(q, 1.0, 1.0)] * c.pp
        items += [am.PPIItem(q, 0.0, 1.0)] * c.pf
        items += [am.PPIItem(q, 1.0, 0.0)] * c.fp
        items += [am.PPIItem(q, 0.0, 0.0)] * c.ff
    samples = []
    for ppi_items in by_system.values():
        judge: dict[object, list[float]] = defaultdict(list)
        human: dict[object, list[float]] = defaultdict(list)
        for i in ppi_items:
            judge[i.cluster].append(i.prediction)
            if i.label is not None:
                human[i.cluster].append(i.label)
        samples += [judge, human]
    ppi = {
        system_id: am.ppi_mean(ppi_items, clustered=True, resamples=resamples)
        for system_id, ppi_items in by_system.items()
    }
    return _calibrated(data, list(by_system), samples, ppi, resamples)


def _answer_calibrated(
    data: RunData, design: sampling.Design | None, resamples: int
) -> list[Calibrated]:
    """`calibrated_scores` on the strategies' scale: each answer is one unit, its judge
    value the strategy's under the panel's verdicts, its human value the strategy's under
    the human reference, known when every scored item of the answer has one (a strategy
    such as aspect or tree is not a sum over items, so a half-labelled answer has no human
    value). PPI++ over answers, clustered by query; under the "least certain" policy the
    labelled answers weigh their inverse chance of being drawn."""
    by_system: dict[int, list[tuple[int, float, float | None, int]]] = defaultdict(list)
    for answer_id, (judged, human) in (data.answer_values or {}).items():
        answer = data.answers.get(answer_id)
        if answer is None or judged is None:
            continue
        by_system[answer.system_id].append((answer.query_id, judged, human, answer_id))
    systems = sorted(by_system)
    samples: list[dict[object, list[float]]] = []
    ppi: dict[int, am.PPIEstimate] = {}
    for system in systems:
        rows = by_system[system]
        judge: dict[object, list[float]] = defaultdict(list)
        human_values: dict[object, list[float]] = defaultdict(list)
        for q, judged, human, _ in rows:
            judge[q].append(judged)
            if human is not None:
                human_values[q].append(human)
        samples += [judge, human_values]
        if design is None:
            items = [am.PPIItem(q, judged, human) for q, judged, human, _ in rows]
            ppi[system] = am.ppi_mean(items, clustered=True, resamples=resamples)
            continue
        labelled = [
            (q, human, judged, design.weights[a], 1)
            for q, judged, human, a in rows
            if human is not None and a in design.weights
        ]
        population = [(q, judged, 1) for q, judged, _, _ in rows]
        ppi[system] = am.ppi_mean_weighted(
            labelled, population, clustered=True, resamples=resamples
        )
    return _calibrated(data, systems, samples, ppi, resamples)


def _calibrated(
    data: RunData,
    systems: list[int],
    samples: list[dict[object, list[float]]],
    ppi: dict[int, am.PPIEstimate],
    resamples: int,
) -> list[Calibrated]:
    """`samples`: each system's judge and human values by query, in `systems`' order."""
    names = {a.system_id: a.system for a in data.answers.values()}
    estimates = am.cluster_bootstraps(samples, resamples=resamples)  # one pass for all
    out = [
        Calibrated(
            system_id, names[system_id], estimates[2 * n], estimates[2 * n + 1],
            ppi[system_id], am.labels_needed(ppi[system_id], 0.05),
        )
        for n, system_id in enumerate(systems)
    ]  # fmt: skip
    return sorted(out, key=lambda c: (c.system, c.system_id))


def _weighted_calibrated(
    data: RunData, design: sampling.Design, resamples: int
) -> list[Calibrated]:
    """`calibrated_scores` under the "least certain" policy: PPI++ with each labelled
    item weighted by its answer's inverse chance of being drawn; the judge-only and
    human-only scores as under the other policies (the human-only one is the mean over
    every labelled item, drawn or not, as the page says)."""
    population: dict[int, list[tuple]] = defaultdict(list)
    labelled: dict[int, list[tuple]] = defaultdict(list)
    samples_by: dict[int, tuple[dict, dict]] = {}
    left_out: dict[int, int] = defaultdict(int)
    for c in data.panel_counts:
        answer = data.answers.get(c.answer_id)
        if answer is None:
            continue
        q, system = answer.query_id, answer.system_id
        judge, human = samples_by.setdefault(system, (defaultdict(list), defaultdict(list)))
        population[system] += [(q, 1.0, c.panel_passed), (q, 0.0, c.judged - c.panel_passed)]
        judge[q] += [1.0] * c.panel_passed + [0.0] * (c.judged - c.panel_passed)
        human[q] += [1.0] * (c.pp + c.pf) + [0.0] * (c.fp + c.ff)
        weight = design.weights.get(c.answer_id)
        if weight is None:
            left_out[system] += c.pp + c.pf + c.fp + c.ff
            continue
        labelled[system] += [
            (q, 1.0, 1.0, weight, c.pp), (q, 1.0, 0.0, weight, c.pf),
            (q, 0.0, 1.0, weight, c.fp), (q, 0.0, 0.0, weight, c.ff),
        ]  # fmt: skip
    systems = list(samples_by)
    ppi = {}
    for system in systems:
        found = am.ppi_mean_weighted(
            [r for r in labelled[system] if r[4]], population[system],
            clustered=True, resamples=resamples,
        )  # fmt: skip
        note = (
            f"least-certain draw: labelled items weighted by their answer's inverse chance;"
            f" {len(design.weights)} answers labelled and {design.skipped} skipped at the"
            f" head of the queue; {left_out[system]} labelled items after it left out"
        )
        ppi[system] = dataclasses.replace(found, method=f"{found.method} ({note})")
    samples = [x for system in systems for x in samples_by[system]]
    return _calibrated(data, systems, samples, ppi, resamples)


@dataclass(frozen=True)
class CurvePoint:
    bucket: am.Bucket
    estimate: am.Estimate


@dataclass(frozen=True)
class CurveLine:
    system_id: int
    system: str
    points: tuple[CurvePoint, ...]  # one per bucket, in bucket order (mean None: no data)


@dataclass(frozen=True)
class ComplexityCurve:
    buckets: tuple[am.Bucket, ...]
    lines: tuple[CurveLine, ...]
    human: Interval  # the experts' mean cross-evaluation overlap
    checklists: dict[str, int] = field(default_factory=dict)  # bucket key -> checklists
    dimension: str = ""  # by this numeric query dimension, not the criteria count

    def as_dict(self) -> dict:
        return {
            "by": f"{DIMENSION}{self.dimension}" if self.dimension else "criteria",
            "buckets": [{"key": b.key, "label": b.label, "low": b.low, "high": b.high}
                        for b in self.buckets],
            "checklists": self.checklists,
            "human_line": {
                "mean": self.human.mean,
                "low": self.human.low,
                "high": self.human.high,
                "pairs": self.human.n_pairs,
                "queries": self.human.n_queries,
                "method": self.human.method,
            },
            "systems": [
                {
                    "system_id": line.system_id,
                    "system": line.system,
                    "points": [{"bucket": p.bucket.key, **p.estimate.as_dict()}
                               for p in line.points],
                }
                for line in self.lines
            ],
        }  # fmt: skip


def complexity_curve(data: RunData, cells: Iterable[Cell], *, human: Interval) -> ComplexityCurve:
    found = {(c.system_id, c.value): c for c in cells if c.group == "bucket"}
    systems = sorted({(a.system, a.system_id) for a in data.answers.values()})
    empty = am.Estimate(None, None, None, 0, 0, "")
    lines = tuple(
        CurveLine(
            system_id,
            name,
            tuple(
                CurvePoint(b, found[system_id, b.key].estimate if (system_id, b.key) in found
                           else empty)
                for b in data.buckets
            ),
        )
        for name, system_id in systems
    )  # fmt: skip
    sizes: dict[str, int] = defaultdict(int)
    for size in data.checklist_size.values():
        sizes[am.bucket_of(size, data.buckets).key] += 1
    return ComplexityCurve(
        data.buckets,
        lines,
        human,
        dict(sizes),
    )


@dataclass(frozen=True)
class BucketRow:
    answer_id: int
    query_id: int
    system: str
    checklist_id: int
    criteria: int
    passed: int
    decided: int
    value: float | None = None  # the checklist's value under its strategy

    @property
    def share(self) -> float | None:
        return self.passed / self.decided if self.decided else None


def bucket_rows(data: RunData, key: str, *, limit: int = 500) -> list[BucketRow]:
    """The (answer, checklist) pairs of one bucket, lowest share first."""
    return every_bucket_rows(data, limit=limit).get(key, [])


def every_bucket_rows(data: RunData, *, limit: int = 500) -> dict[str, list[BucketRow]]:
    """`bucket_rows` of every bucket, in one pass over the items, lowest value first."""
    bucket_of = {c: am.bucket_of(size, data.buckets).key for c, size in data.checklist_size.items()}
    tally: dict[tuple[int, int], list[int]] = defaultdict(lambda: [0, 0])
    for a, c, _, passed, decided, _ in data.groups:
        if a not in data.answers:
            continue
        t = tally[a, c]
        t[0] += passed
        t[1] += decided
    found: dict[str, list[BucketRow]] = {b.key: [] for b in data.buckets}
    checklist_values = values(data)
    for (a, c), (passed, decided) in tally.items():
        found[bucket_of[c]].append(
            BucketRow(
                a,
                data.answers[a].query_id,
                data.answers[a].system,
                c,
                data.checklist_size[c],
                passed,
                decided,
                checklist_values.get((a, c)),
            )
        )
    for rows in found.values():
        rows.sort(key=lambda r: (r.value if r.value is not None else 2.0, r.system, r.answer_id))
        del rows[limit:]
    return found


@dataclass(frozen=True)
class QueryDelta:
    query_id: int
    a: float
    b: float
    answer_a: int
    answer_b: int

    @property
    def difference(self) -> float:
        return self.b - self.a


@dataclass(frozen=True)
class Comparison:
    system_a: str
    system_b: str
    test: am.PairedComparison
    deltas: list[QueryDelta]  # every paired query, largest regression first

    def regressions(self, n: int = 10) -> list[QueryDelta]:
        return [d for d in self.deltas if d.difference < 0][:n]

    def gains(self, n: int = 10) -> list[QueryDelta]:
        return [d for d in reversed(self.deltas) if d.difference > 0][:n]


def systems_of(data: RunData) -> list[tuple[int, str]]:
    return sorted({(a.system_id, a.system) for a in data.answers.values()}, key=lambda s: s[1])


def query_scores(data: RunData, system_id: int | None) -> dict[int, tuple[float, int]]:
    """query -> (mean score of the system's answers to it (its samples), one answer id to
    link to). Without a system, the mean over systems of each one's mean: a system that
    answered the query k times counts once, as one that answered it once."""
    # Only the overall share is needed: without the page's shares at hand, those alone.
    if data.overall is None:
        shares = data.shares if data.shares is not None else _overall_shares(data)
        data.overall = [(a, share) for (a, group, _), share in shares.items() if group == "all"]
    per_query: dict[int, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    first: dict[int, int] = {}
    for answer_id, share in data.overall:
        answer = data.answers[answer_id]
        if system_id is None or answer.system_id == system_id:
            per_query[answer.query_id][answer.system_id].append(share)
            first[answer.query_id] = min(first.get(answer.query_id, answer_id), answer_id)
    return {
        q: (am.mean_of_means(by_system.values()), first[q]) for q, by_system in per_query.items()
    }


def compare_runs(
    a: RunData,
    b: RunData,
    *,
    system_a: int | None,
    system_b: int | None,
    resamples: int = am.BOOTSTRAP_RESAMPLES,
) -> Comparison:
    names_a, names_b = dict(systems_of(a)), dict(systems_of(b))
    return compare_scores(
        query_scores(a, system_a),
        query_scores(b, system_b),
        names_a.get(system_a, "every system") if system_a else "every system",
        names_b.get(system_b, "every system") if system_b else "every system",
        resamples=resamples,
    )


def compare_scores(
    qa: dict[int, tuple[float, int]],
    qb: dict[int, tuple[float, int]],
    name_a: str,
    name_b: str,
    *,
    resamples: int = am.BOOTSTRAP_RESAMPLES,
) -> Comparison:
    """Two runs' per-query scores (`query_scores`) compared."""
    test = am.paired_comparison(
        {q: s for q, (s, _) in qa.items()}, {q: s for q, (s, _) in qb.items()}, resamples=resamples
    )
    deltas = [QueryDelta(q, qa[q][0], qb[q][0], qa[q][1], qb[q][1]) for q in set(qa) & set(qb)]
    deltas.sort(key=lambda d: (d.difference, d.query_id))
    return Comparison(name_a, name_b, test, deltas)


def criterion_health(data: RunData) -> list[am.CriterionHealth]:
    """Counted per criterion in SQL (`load_run` with HEALTH)."""
    if data.health is None:
        raise ValueError("criterion health needs load_run(..., parts=[HEALTH])")
    return am.criterion_health(data.health)


def calibration_items(data: RunData) -> dict[tuple[int, int], CalibrationItem]:
    """(answer, criterion) -> each judge's label (the majority of its valid samples) and
    the human reference, on the labelled items the run's judges voted on (read by
    `load_run` with LABELLED)."""
    if data.calibration is None:
        raise ValueError("judge calibration needs load_run(..., parts=[LABELLED])")
    return data.calibration


@dataclass(frozen=True)
class JudgeAgreement:
    """One judge (or the run's panel) against the human reference on the labelled items
    of one group (every item, a criterion kind, a source type)."""

    rater: str  # a judge's name, or PANEL
    group: str  # "all", "kind", "source"
    value: str
    agreement: Agreement

    def as_dict(self) -> dict:
        k = self.agreement.kappa
        return {
            "rater": self.rater,
            "group": self.group,
            "value": self.value,
            "n": self.agreement.n,
            "percent": self.agreement.percent,
            "kappa": k.kappa,
            "kappa_low": k.low,
            "kappa_high": k.high,
        }


PANEL = "(the run's panel)"


def judge_agreement(
    data: RunData, items: dict[tuple[int, int], CalibrationItem] | None = None
) -> list[JudgeAgreement]:
    """Per judge and for the run's panel (its verdict with the run's rule), agreement with
    the human reference overall, by criterion kind and by source type (a criterion with
    several source types counts in each). Items a rater left without a label are out."""
    items = calibration_items(data) if items is None else items
    if not items:
        return []
    info = {(i.answer_id, i.criterion_id): i for i in data.labelled_items or ()}
    # Items alike in kind, source types, raters' labels and reference count together: a
    # few thousand patterns for 40,000 labelled items, each added to its cells once.
    patterns: Counter = Counter()
    for key, calibration in items.items():
        item = info[key]
        labels = dict(calibration.judges)
        if item.panel in ("pass", "fail"):
            labels[PANEL] = item.panel
        sources = data.sources.get(item.criterion_id, ())
        patterns[item.kind, sources, tuple(labels.items()), calibration.human] += 1
    cells: dict[tuple[str, str, str], Counter] = defaultdict(Counter)
    for (kind, sources, labels, human), n in patterns.items():
        groups = [("all", ""), ("kind", kind)]
        groups += [("source", s) for s in sources] or [("source", NO_VALUE)]
        for rater, label in labels:
            if label is None:
                continue
            for group, value in groups:
                cells[rater, group, value][label, human] += n
    order = {"all": 0, "kind": 1, "source": 2}
    return sorted(
        (
            JudgeAgreement(rater, group, value, agreement_from_matrix(matrix_from_counts(c)))
            for (rater, group, value), c in cells.items()
        ),
        key=lambda a: (a.rater != PANEL, a.rater, order[a.group], a.value == NO_VALUE, a.value),
    )


def saturated(data: RunData) -> list[int]:
    """Queries every system of the run answers fully (too easy)."""
    scores: dict[int, dict[int, float]] = defaultdict(dict)
    for system_id, _ in systems_of(data):
        for query_id, (score, _) in query_scores(data, system_id).items():
            scores[query_id][system_id] = score
    return am.saturated_queries(scores)
