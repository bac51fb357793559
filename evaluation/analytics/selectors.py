"""Reads behind the analytics pages and API: a run's items, aggregated in SQL, then the
figures (system scores with intervals by group, PPI++, the complexity curve, run
comparison, criterion health) from the plain-Python statistics in
`evaluation/metrics/analytics.py`.

What is loaded, whatever the size of the run (seven queries):
- one row per (answer, criterion) with its pass and fail vote counts (GROUP BY in SQL:
  never one row per vote);
- the dataset's scored criteria (checklist, kind), their source types;
- the run's answers (query, category, system);
- adjudications, and human labels counted per (answer, criterion, label) (GROUP BY).

Definitions (docs/metrics.md, "Analytics"):
- An item's decided outcome: its adjudication where there is one, else the panel's
  aggregated verdict with the run's method and threshold (its snapshot), as run scores do.
- The score of an answer in a group: the mean over its query's checklists of the share
  of the group's decided criteria passed; a system's score in a group: the mean over its
  answers, with a 95% percentile bootstrap interval over queries (seeded).
- Complexity: a checklist's number of scored criteria graded in the run; the curve puts
  each (answer, checklist) in the bucket of its checklist.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from django.db.models import Count, Exists, OuterRef, Q, Sum

from annotation.models import Criterion, Dataset
from evaluation.cross_evaluation.selectors import dataset_mean_overlap
from evaluation.metrics import analytics as am
from evaluation.metrics.aggregation import Vote, aggregate
from evaluation.metrics.agreement import Agreement, agreement_from_matrix, matrix_from_counts
from evaluation.metrics.calibration import CalibrationItem, PanelOption, panel_options
from evaluation.metrics.cost import JudgeUsage
from evaluation.metrics.overlap import Interval
from evaluation.metrics.summary import decided_outcome
from evaluation.models import Adjudication, Answer, HumanLabel, Judge, Run, Verdict

NO_VALUE = "(none)"
# Pages draw fewer resamples than the domain default: a system × group grid of intervals
# is drawn on every request, and 1,000 percentile resamples are stable to about 0.005.
PAGE_RESAMPLES = 1000
GROUPS = ("category", "bucket", "kind", "source")


@dataclass(frozen=True)
class AnswerInfo:
    answer_id: int
    query_id: int
    system_id: int
    system: str
    category: str


class Item(NamedTuple):
    """One (answer, criterion) of the run (a named tuple: 200,000 are built per load)."""

    answer_id: int
    criterion_id: int
    checklist_id: int
    kind: str
    panel: str  # pass / fail / undecided: the run's panel, its own method
    outcome: str  # decided: the adjudication where there is one, else the panel
    adjudicated: bool
    split: bool  # the valid votes disagreed
    human: str | None  # adjudication, else the majority of human labels; None: none or tie


@dataclass
class RunData:
    run: Run
    answers: dict[int, AnswerInfo]
    items: list[Item]
    sources: dict[int, tuple[str, ...]]  # criterion -> source type names
    checklist_size: dict[int, int]  # scored criteria graded in the run
    buckets: tuple[am.Bucket, ...]
    # (answer, group, value) -> score: computed once, used by every figure of a page.
    shares: dict[tuple[int, str, str], float] | None = None

    @property
    def adjudicated(self) -> int:
        return sum(i.adjudicated for i in self.items)

    @property
    def labelled(self) -> int:
        return sum(i.human is not None for i in self.items)


def analysable_runs(dataset: Dataset) -> list[Run]:
    """Runs that grade system answers or hold imported verdicts, newest first."""
    return list(
        dataset.runs.exclude(kind=Run.Kind.CROSS_EVALUATION)
        .select_related("panel")
        .order_by("-created_at", "-id")[:50]
    )


def choose_run(dataset: Dataset, run_id: int | None, runs: Sequence[Run]) -> Run | None:
    """The run asked for (Run.DoesNotExist when it is not one of the dataset's analysable
    runs), else the latest finished one, else the latest."""
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
    if done:
        return max(done, key=lambda r: (r.finished_at or r.created_at, r.pk))
    return runs[0] if runs else None


def _outcome(passes: int, fails: int, run: Run) -> str:
    votes = [Vote("p", i, "pass") for i in range(passes)]
    votes += [Vote("f", i, "fail") for i in range(fails)]
    return aggregate(votes, run.panel_method, threshold=run.panel_threshold).outcome


def load_run(
    run: Run, *, edges: Sequence[int] = am.DEFAULT_EDGES, queries: Sequence[int] | None = None
) -> RunData:
    """`queries`: only the answers to these queries (a page of the query list)."""
    dataset_id = run.dataset_id
    buckets = am.complexity_buckets(edges)
    verdicts = Verdict.objects.filter(run=run)
    if queries is not None:
        verdicts = verdicts.filter(answer__query_id__in=list(queries))
    counts = (
        verdicts.values("answer_id", "criterion_id")
        .annotate(
            p=Count("pk", filter=Q(outcome=Verdict.Outcome.PASS)),
            f=Count("pk", filter=Q(outcome=Verdict.Outcome.FAIL)),
        )
        .order_by()
        .values_list("answer_id", "criterion_id", "p", "f")
    )
    criteria_of = Criterion.objects.filter(checklist__query__dataset_id=dataset_id)
    labels_of = HumanLabel.objects.filter(answer__query__dataset_id=dataset_id)
    adjudications_of = Adjudication.objects.filter(answer__query__dataset_id=dataset_id)
    if queries is not None:  # only what the chosen queries' items name
        criteria_of = criteria_of.filter(pk__in=verdicts.values("criterion_id"))
        labels_of = labels_of.filter(answer__query_id__in=list(queries))
        adjudications_of = adjudications_of.filter(answer__query_id__in=list(queries))
    criteria = {
        pk: (checklist_id, kind)
        for pk, checklist_id, kind in criteria_of.filter(scoring_enabled=True).values_list(
            "pk", "checklist_id", "kind"
        )
    }
    sources: dict[int, list[str]] = defaultdict(list)
    for criterion_id, name in Criterion.source_types.through.objects.filter(
        criterion__in=criteria_of
    ).values_list("criterion_id", "sourcetype__name"):
        sources[criterion_id].append(name)
    adjudications = {
        (a, c): label
        for a, c, label in adjudications_of.values_list("answer_id", "criterion_id", "label")
    }
    tallies: dict[tuple[int, int], dict[str, int]] = defaultdict(dict)
    for a, c, label, n in (
        labels_of.values("answer_id", "criterion_id", "label")
        .annotate(n=Count("pk"))
        .order_by()
        .values_list("answer_id", "criterion_id", "label", "n")
    ):
        tallies[a, c][label] = n

    items: list[Item] = []
    checklist_criteria: dict[int, set[int]] = defaultdict(set)
    # The verdict depends only on the counts: a handful of (p, f) pairs for any run size.
    outcomes: dict[tuple[int, int], str] = {}
    for answer_id, criterion_id, p, f in counts:
        info = criteria.get(criterion_id)
        if info is None:  # scoring disabled: in no figure, as in run scores
            continue
        panel = outcomes.get((p, f))
        if panel is None:
            panel = outcomes[p, f] = _outcome(p, f, run)
        label = adjudications.get((answer_id, criterion_id))
        human = label
        if human is None and (t := tallies.get((answer_id, criterion_id))):
            passes, fails = t.get("pass", 0), t.get("fail", 0)
            human = "pass" if passes > fails else "fail" if fails > passes else None
        items.append(
            Item(
                answer_id=answer_id,
                criterion_id=criterion_id,
                checklist_id=info[0],
                kind=info[1],
                panel=panel,
                outcome=decided_outcome(panel, label),
                adjudicated=label is not None,
                split=p > 0 and f > 0,
                human=human,
            )
        )
        checklist_criteria[info[0]].add(criterion_id)
    answers = {
        pk: AnswerInfo(pk, query_id, system_id, f"{name} {version}".strip(), category or NO_VALUE)
        for pk, query_id, system_id, name, version, category in Answer.objects.filter(
            pk__in=verdicts.values("answer_id")
        ).values_list(
            "pk",
            "query_id",
            "system_id",
            "system__name",
            "system__version",
            "query__category__name",
        )
    }
    return RunData(
        run=run,
        answers=answers,
        items=items,
        sources={c: tuple(sorted(names)) for c, names in sources.items()},
        checklist_size={c: len(ids) for c, ids in checklist_criteria.items()},
        buckets=buckets,
    )


# -- system scores by group ------------------------------------------------------------


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


def _compute_shares(data: RunData) -> dict[tuple[int, str, str], float]:
    # The (group, value) keys of an item depend on its criterion (bucket, kind, sources)
    # and its answer (category): worked out once per criterion, not once per item.
    by_criterion: dict[int, tuple[tuple[str, str], ...]] = {}
    tally: dict[tuple[int, str, str, int], list[int]] = defaultdict(lambda: [0, 0])
    answers = data.answers
    for item in data.items:
        outcome = item.outcome
        if outcome != "pass" and outcome != "fail":
            continue
        answer = answers.get(item.answer_id)
        if answer is None:
            continue
        keys = by_criterion.get(item.criterion_id)
        if keys is None:
            bucket = am.bucket_of(data.checklist_size[item.checklist_id], data.buckets).key
            keys = (("all", ""), ("bucket", bucket), ("kind", item.kind))
            keys += tuple(("source", s) for s in data.sources.get(item.criterion_id, ())) or (
                ("source", NO_VALUE),
            )
            by_criterion[item.criterion_id] = keys
        passed = outcome == "pass"
        a, c = item.answer_id, item.checklist_id
        for group, value in (*keys, ("category", answer.category)):
            t = tally[a, group, value, c]
            t[0] += passed
            t[1] += 1
    per_checklist: dict[tuple[int, str, str], list[float]] = defaultdict(list)
    for (answer_id, group, value, _), (passed, decided) in tally.items():
        per_checklist[answer_id, group, value].append(passed / decided)
    return {k: sum(v) / len(v) for k, v in per_checklist.items()}


def _overall_shares(data: RunData) -> dict[tuple[int, str, str], float]:
    """`_compute_shares` of the group "all" alone (the same sums in the same order)."""
    tally: dict[tuple[int, int], list[int]] = defaultdict(lambda: [0, 0])
    for item in data.items:
        outcome = item.outcome
        if (outcome == "pass" or outcome == "fail") and item.answer_id in data.answers:
            t = tally[item.answer_id, item.checklist_id]
            t[0] += outcome == "pass"
            t[1] += 1
    per_checklist: dict[tuple[int, str, str], list[float]] = defaultdict(list)
    for (answer_id, _), (passed, decided) in tally.items():
        per_checklist[answer_id, "all", ""].append(passed / decided)
    return {k: sum(v) / len(v) for k, v in per_checklist.items()}


def system_scores(data: RunData, *, resamples: int = PAGE_RESAMPLES) -> list[Cell]:
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
    estimates = am.cluster_bootstraps([by_cell[k] for k in keys], resamples=resamples)
    cells = [
        Cell(system_id, names[system_id], group, value, estimate)
        for (system_id, group, value), estimate in zip(keys, estimates, strict=True)
    ]
    return sorted(
        cells,
        key=lambda c: (
            c.system,
            c.system_id,
            ("all", *GROUPS).index(c.group),
            order.get(c.value, 0) if c.group == "bucket" else 0,
            c.value,
        ),
    )


# -- human-calibrated scores (PPI++) -------------------------------------------------------


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


def calibrated_scores(data: RunData, *, resamples: int = PAGE_RESAMPLES) -> list[Calibrated]:
    """Per system, on the item scale (the share of (answer, criterion) items passed):
    judge-only, human-only and PPI++, each clustered by query."""
    by_system: dict[int, list[am.PPIItem]] = defaultdict(list)
    for item in data.items:
        if item.panel not in ("pass", "fail"):
            continue  # no judge prediction: neither imputed nor rectified
        answer = data.answers.get(item.answer_id)
        if answer is None:
            continue
        label = None if item.human is None else float(item.human == "pass")
        by_system[answer.system_id].append(
            am.PPIItem(answer.query_id, float(item.panel == "pass"), label)
        )
    names = {a.system_id: a.system for a in data.answers.values()}
    samples = []
    for ppi_items in by_system.values():
        judge: dict[object, list[float]] = defaultdict(list)
        human: dict[object, list[float]] = defaultdict(list)
        for i in ppi_items:
            judge[i.cluster].append(i.prediction)
            if i.label is not None:
                human[i.cluster].append(i.label)
        samples += [judge, human]
    estimates = am.cluster_bootstraps(samples, resamples=resamples)  # one pass for all
    out = []
    for n, (system_id, ppi_items) in enumerate(by_system.items()):
        ppi = am.ppi_mean(ppi_items, clustered=True, resamples=resamples)
        out.append(
            Calibrated(
                system_id,
                names[system_id],
                estimates[2 * n],
                estimates[2 * n + 1],
                ppi,
                am.labels_needed(ppi, 0.05),
            )
        )
    return sorted(out, key=lambda c: (c.system, c.system_id))


# -- the complexity curve ---------------------------------------------------------------


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

    def as_dict(self) -> dict:
        return {
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


def complexity_curve(
    data: RunData, cells: Iterable[Cell], *, human: Interval | None = None
) -> ComplexityCurve:
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
        human if human is not None else dataset_mean_overlap(data.run.dataset),
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

    @property
    def share(self) -> float | None:
        return self.passed / self.decided if self.decided else None


def bucket_rows(data: RunData, key: str, *, limit: int = 500) -> list[BucketRow]:
    """The (answer, checklist) pairs of one bucket, lowest share first."""
    return every_bucket_rows(data, limit=limit).get(key, [])


def every_bucket_rows(data: RunData, *, limit: int = 500) -> dict[str, list[BucketRow]]:
    """`bucket_rows` of every bucket, in one pass over the items."""
    bucket_of = {c: am.bucket_of(size, data.buckets).key for c, size in data.checklist_size.items()}
    tally: dict[tuple[int, int], list[int]] = defaultdict(lambda: [0, 0])
    for item in data.items:
        if item.answer_id not in data.answers:
            continue
        t = tally[item.answer_id, item.checklist_id]
        t[0] += item.outcome == "pass"
        t[1] += item.outcome in ("pass", "fail")
    found: dict[str, list[BucketRow]] = {b.key: [] for b in data.buckets}
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
            )
        )
    for rows in found.values():
        rows.sort(key=lambda r: (r.share if r.share is not None else 2.0, r.system, r.answer_id))
        del rows[limit:]
    return found


# -- run comparison ------------------------------------------------------------------------


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
    """query -> (mean score of the system's answers to it, one answer id to link to).
    Without a system, every answer of the query counts."""
    # Only the overall share is needed: without the page's shares at hand, those alone.
    shares = data.shares if data.shares is not None else _overall_shares(data)
    per_query: dict[int, list[tuple[float, int]]] = defaultdict(list)
    for (answer_id, group, _), share in shares.items():
        if group != "all":
            continue
        answer = data.answers[answer_id]
        if system_id is None or answer.system_id == system_id:
            per_query[answer.query_id].append((share, answer_id))
    return {q: (sum(s for s, _ in v) / len(v), min(a for _, a in v)) for q, v in per_query.items()}


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


# -- criterion health ----------------------------------------------------------------------


def criterion_health(data: RunData) -> list[am.CriterionHealth]:
    tallies: dict[int, list[int]] = defaultdict(lambda: [0] * 6)
    passing: dict[int, set[int]] = defaultdict(set)
    deciding: dict[int, set[int]] = defaultdict(set)
    for item in data.items:
        answer = data.answers.get(item.answer_id)
        if answer is None:
            continue
        t = tallies[item.criterion_id]
        t[0] += item.outcome == "pass"
        t[1] += item.outcome == "fail"
        t[2] += item.split
        t[3] += item.panel in ("pass", "fail") or item.split
        compared = item.human is not None and item.panel in ("pass", "fail")
        t[4] += compared
        t[5] += compared and item.panel != item.human
        if item.outcome in ("pass", "fail"):
            deciding[item.criterion_id].add(answer.system_id)
        if item.outcome == "pass":
            passing[item.criterion_id].add(answer.system_id)
    return am.criterion_health(
        am.CriterionItems(c, t[0], t[1], t[2], t[3], t[4], t[5], len(passing[c]), len(deciding[c]))
        for c, t in tallies.items()
    )


# -- judge calibration: which panel agrees best with people ---------------------------------


def calibration_items(data: RunData) -> dict[tuple[int, int], CalibrationItem]:
    """(answer, criterion) -> each judge's label (the majority of its valid samples) and
    the human reference, on the labelled items the run's judges voted on. One query."""
    references = {(i.answer_id, i.criterion_id): i.human for i in data.items if i.human}
    if not references:
        return {}
    tallies: dict[tuple[int, int], dict[str, list[int]]] = defaultdict(dict)
    # Only the labelled items' verdicts (a label or an adjudication on the same answer and
    # criterion): a fifth of the run's rows at 40,000 labelled items of 200,000.
    labelled = Exists(
        HumanLabel.objects.filter(
            answer_id=OuterRef("answer_id"), criterion_id=OuterRef("criterion_id")
        )
    ) | Exists(
        Adjudication.objects.filter(
            answer_id=OuterRef("answer_id"), criterion_id=OuterRef("criterion_id")
        )
    )
    for answer_id, criterion_id, judge, p, f in (
        Verdict.objects.filter(labelled, run=data.run)
        .values("answer_id", "criterion_id", "judge__name")
        .annotate(
            p=Count("pk", filter=Q(outcome=Verdict.Outcome.PASS)),
            f=Count("pk", filter=Q(outcome=Verdict.Outcome.FAIL)),
        )
        .order_by()
        .values_list("answer_id", "criterion_id", "judge__name", "p", "f")
    ):
        if (answer_id, criterion_id) in references:
            tallies[answer_id, criterion_id][judge] = [p, f]
    return {
        key: CalibrationItem(
            references[key],
            {
                judge: "pass" if p > f else "fail" if f > p else None
                for judge, (p, f) in judges.items()
            },
        )
        for key, judges in tallies.items()
    }


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
    info = {(i.answer_id, i.criterion_id): i for i in data.items}
    cells: dict[tuple[str, str, str], Counter] = defaultdict(Counter)
    for key, calibration in items.items():
        item = info[key]
        groups = [("all", ""), ("kind", item.kind)]
        groups += [("source", s) for s in data.sources.get(item.criterion_id, ())] or [
            ("source", NO_VALUE)
        ]
        labels = dict(calibration.judges)
        if item.panel in ("pass", "fail"):
            labels[PANEL] = item.panel
        for rater, label in labels.items():
            if label is None:
                continue
            for group, value in groups:
                cells[rater, group, value][label, calibration.human] += 1
    order = {"all": 0, "kind": 1, "source": 2}
    return sorted(
        (
            JudgeAgreement(rater, group, value, agreement_from_matrix(matrix_from_counts(c)))
            for (rater, group, value), c in cells.items()
        ),
        key=lambda a: (a.rater != PANEL, a.rater, order[a.group], a.value == NO_VALUE, a.value),
    )


def panel_calibration(
    data: RunData, items: dict[tuple[int, int], CalibrationItem] | None = None
) -> list[PanelOption]:
    """Every subset of the run's judges × voting rule against the human reference on the
    labelled items, best first, with each judge's cost in this run. Three queries."""
    items = calibration_items(data) if items is None else items
    if not items:
        return []
    tokens = {
        name: (prompt or 0, completion or 0, kind, prompt_price, completion_price)
        for name, prompt, completion, kind, prompt_price, completion_price in (
            Verdict.objects.filter(run=data.run)
            .values("judge__name")
            .annotate(pt=Sum("prompt_tokens"), ct=Sum("completion_tokens"))
            .order_by()
            .values_list(
                "judge__name",
                "pt",
                "ct",
                "judge__kind",
                "judge__prompt_price",
                "judge__completion_price",
            )
        )
    }
    costs = {
        name: JudgeUsage(name, kind == Judge.Kind.LLM, pt, ct, pp, cp).cost()
        for name, (pt, ct, kind, pp, cp) in tokens.items()
    }
    return panel_options(items.values(), costs)


# -- saturation ------------------------------------------------------------------------------


def saturated(data: RunData) -> list[int]:
    """Queries every system of the run answers fully (too easy)."""
    scores: dict[int, dict[int, float]] = defaultdict(dict)
    for system_id, _ in systems_of(data):
        for query_id, (score, _) in query_scores(data, system_id).items():
            scores[query_id][system_id] = score
    return am.saturated_queries(scores)
