"""Reads behind the analytics pages and API: a run's items, aggregated in SQL, then the
figures (system scores with intervals by group, PPI++, the complexity curve, run
comparison, criterion health) from the plain-Python statistics in
`evaluation/metrics/analytics.py`.

What is loaded, whatever the size of the run (`load_run`, eight to eleven queries): the
run's scored items in a temporary table (one row per (answer, criterion): its vote
counts, panel verdict, decided outcome and human reference, all worked out in SQL), and
from it only counts, never one Python row per item:
- per (answer, checklist, kind) and per (answer, checklist, source type): items passed
  and decided (the scores, the curve, the drill-down, per-query scores);
- per answer: panel verdicts and labelled (human, panel) pairs (PPI++);
- per criterion: criterion health (when asked for);
- the labelled items one by one, with each judge's label (judge calibration; few);
- the run's answers (query, category, system).

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

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from django.db import connection, transaction
from django.db.models import Sum

from annotation.models import Checklist, Criterion, Query
from evaluation.cross_evaluation.selectors import dataset_mean_overlap
from evaluation.kept import figures as kept_figures
from evaluation.kept import readers
from evaluation.metrics import analytics as am
from evaluation.metrics import votes_sql
from evaluation.metrics.agreement import Agreement, agreement_from_matrix, matrix_from_counts
from evaluation.metrics.calibration import CalibrationItem, PanelOption, panel_options
from evaluation.metrics.cost import JudgeUsage
from evaluation.metrics.overlap import Interval
from evaluation.models import Adjudication, Answer, HumanLabel, Judge, Run, Verdict
from evaluation.review import sampling
from evaluation.review import selectors as review_selectors

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


# What a caller may ask `load_run` for besides the scores (always loaded).
HEALTH, LABELLED = "health", "labelled"


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


ITEMS_TABLE = "analytics_run_items"


def _items_select(run: Run, queries: Sequence[int] | None) -> tuple[str, list]:
    """One row per scored (answer, criterion) of the run, with its panel verdict, decided
    outcome and human reference: the SELECT and its parameters."""
    t = {
        m: m._meta.db_table
        for m in (Verdict, Answer, Criterion, Checklist, Query, HumanLabel, Adjudication)
    }
    only = labels_only = ""
    ids: list[int] = []
    if queries is not None:
        ids = [int(q) for q in queries] or [0]
        marks = ", ".join(["%s"] * len(ids))
        only = f" AND v.answer_id IN (SELECT id FROM {t[Answer]} WHERE query_id IN ({marks}))"  # noqa: S608
        # The labels too: grouping every label of the dataset for one query's items cost
        # the checklist editor 200 ms at 200,000 labels.
        labels_only = f" AND ha.query_id IN ({marks})"
    params: list = [run.pk, *ids, run.dataset_id, *ids, run.dataset_id]
    panel = votes_sql.panel_outcome(run.panel_method, run.panel_threshold, "p", "f")
    # Votes grouped by item alone (the verdicts' index gives them in item order), then
    # joined to the item's answer, criterion, adjudication and human labels (the labels
    # grouped per item over the dataset: a few per labelled item).
    return (
        f"""
        SELECT answer_id, criterion_id, system_id, query_id, checklist_id, kind, p, f, panel,
               COALESCE(adjudication, panel) AS outcome,
               CASE WHEN adjudication IS NULL THEN 0 ELSE 1 END AS adjudicated,
               COALESCE(adjudication, CASE WHEN hp > hf THEN 'pass'
                                           WHEN hf > hp THEN 'fail' END) AS human
        FROM (
            SELECT votes.*, a.system_id, a.query_id, c.checklist_id, c.kind, {panel} AS panel,
                   j.label AS adjudication, l.hp, l.hf
            FROM (
                SELECT v.answer_id, v.criterion_id,
                       SUM(CASE WHEN v.outcome = 'pass' THEN 1 ELSE 0 END) AS p,
                       SUM(CASE WHEN v.outcome = 'fail' THEN 1 ELSE 0 END) AS f
                FROM {t[Verdict]} v
                WHERE v.run_id = %s{only}
                GROUP BY v.answer_id, v.criterion_id
            ) votes
            JOIN {t[Answer]} a ON a.id = votes.answer_id
            JOIN {t[Criterion]} c ON c.id = votes.criterion_id
            JOIN {t[Checklist]} cl ON cl.id = c.checklist_id
            JOIN {t[Query]} q ON q.id = cl.query_id
            LEFT JOIN {t[Adjudication]} j
                ON j.answer_id = votes.answer_id AND j.criterion_id = votes.criterion_id
            LEFT JOIN (
                SELECT h.answer_id, h.criterion_id,
                       SUM(CASE WHEN h.label = 'pass' THEN 1 ELSE 0 END) AS hp,
                       SUM(CASE WHEN h.label = 'fail' THEN 1 ELSE 0 END) AS hf
                FROM {t[HumanLabel]} h
                JOIN {t[Answer]} ha ON ha.id = h.answer_id
                JOIN {t[Query]} hq ON hq.id = ha.query_id
                WHERE hq.dataset_id = %s{labels_only}
                GROUP BY h.answer_id, h.criterion_id
            ) l ON l.answer_id = votes.answer_id AND l.criterion_id = votes.criterion_id
            WHERE c.scoring_enabled AND q.dataset_id = %s
        ) judged
        """,  # noqa: S608 (table names from the models; values are parameters)
        params,
    )


class _Items:
    """The run's items for the aggregates: a temporary table (this connection only)
    filled once, so that each aggregate reads it instead of grouping the verdicts again;
    inside a read-only transaction (the dataset export's snapshot), where PostgreSQL
    refuses CREATE, the same SELECT as a subquery of each aggregate instead."""

    def __init__(self, cursor, run: Run, queries: Sequence[int] | None) -> None:
        self.cursor = cursor
        select, params = _items_select(run, queries)
        self.temporary = not kept_figures.writes_refused()
        if self.temporary:
            cursor.execute(f"CREATE TEMPORARY TABLE {ITEMS_TABLE} AS {select}", params)
            self.source, self.params = ITEMS_TABLE, []
        else:
            self.source, self.params = f"({select})", params

    def execute(self, sql: str, params: Sequence = ()) -> list[tuple]:
        """`sql` names the items `{items}` with an alias (a subquery needs one); they come
        before any other parameter."""
        self.cursor.execute(sql.replace("{items}", self.source), [*self.params, *params])
        return self.cursor.fetchall()

    def drop(self) -> None:
        if self.temporary:
            self.cursor.execute(f"DROP TABLE IF EXISTS {ITEMS_TABLE}")


def load_run(
    run: Run,
    *,
    edges: Sequence[int] = am.DEFAULT_EDGES,
    queries: Sequence[int] | None = None,
    parts: Iterable[str] = (HEALTH, LABELLED),
) -> RunData:
    """A run's items counted in SQL: per (answer, checklist, kind) and per (answer,
    checklist, source type) for the scores, per answer for PPI++, per criterion for
    criterion health (`parts` HEALTH) and item by item only where a person labelled it
    (`parts` LABELLED: judge calibration). `queries`: only the answers to these queries."""
    parts = set(parts)
    buckets = am.complexity_buckets(edges)
    verdicts = Verdict.objects.filter(run=run)
    if queries is not None:
        verdicts = verdicts.filter(answer__query_id__in=list(queries))
    through = Criterion.source_types.through
    source_table = through._meta.get_field("sourcetype").related_model._meta.db_table
    decided = "CASE WHEN outcome = 'pass' OR outcome = 'fail' THEN 1 ELSE 0 END"
    passed = "CASE WHEN outcome = 'pass' THEN 1 ELSE 0 END"
    # One transaction: the temporary table lives and dies inside it, even behind a
    # transaction-pooling proxy that may hand each statement outside one to another session.
    with transaction.atomic(), connection.cursor() as cursor:
        items = _Items(cursor, run, queries)
        try:
            rows = items.execute(
                f"""SELECT answer_id, checklist_id, kind, SUM({passed}), SUM({decided}),
                           COUNT(*), SUM(adjudicated),
                           SUM(CASE WHEN human IS NULL THEN 0 ELSE 1 END)
                    FROM {{items}} items GROUP BY answer_id, checklist_id, kind
                    ORDER BY answer_id, checklist_id, kind"""  # noqa: S608
            )
            groups = [r[:6] for r in rows]  # plain tuples: tens of thousands
            found = items.execute(
                f"""SELECT i.answer_id, i.checklist_id, s.name, SUM({passed}), SUM({decided})
                    FROM {{items}} i
                    LEFT JOIN {through._meta.db_table} cs ON cs.criterion_id = i.criterion_id
                    LEFT JOIN {source_table} s ON s.id = cs.sourcetype_id
                    WHERE i.outcome = 'pass' OR i.outcome = 'fail'
                    GROUP BY i.answer_id, i.checklist_id, s.name
                    ORDER BY i.answer_id, i.checklist_id, s.name"""  # noqa: S608
            )
            source_groups = found
            checklist_size = dict(
                items.execute(
                    """SELECT checklist_id, COUNT(DISTINCT criterion_id) FROM {items} items
                       GROUP BY checklist_id"""
                )
            )

            def both(h: str, p: str) -> str:
                return f"SUM(CASE WHEN human = '{h}' AND panel = '{p}' THEN 1 ELSE 0 END)"

            found = items.execute(
                f"""SELECT answer_id, COUNT(*), SUM(CASE WHEN panel = 'pass' THEN 1 ELSE 0 END),
                           {both("pass", "pass")}, {both("pass", "fail")},
                           {both("fail", "pass")}, {both("fail", "fail")}
                    FROM {{items}} items WHERE panel = 'pass' OR panel = 'fail'
                    GROUP BY answer_id ORDER BY answer_id"""  # noqa: S608
            )
            panel_counts = [PanelCounts(*r) for r in found]
            health = _health_counts(items) if HEALTH in parts else None
            labelled_items = calibration = None
            sources: dict[int, tuple[str, ...]] = {}
            if LABELLED in parts:
                labelled_items, calibration, sources = _labelled(items, run)
        finally:
            items.drop()
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
        groups=groups,
        source_groups=source_groups,
        panel_counts=panel_counts,
        sources=sources,
        checklist_size=checklist_size,
        buckets=buckets,
        item_count=sum(r[5] for r in rows),
        adjudicated=sum(r[6] for r in rows),
        labelled=sum(r[7] for r in rows),
        labelled_items=labelled_items,
        calibration=calibration,
        health=health,
    )


def _health_counts(items: _Items) -> list[am.CriterionItems]:
    def count(condition: str) -> str:
        return f"SUM(CASE WHEN {condition} THEN 1 ELSE 0 END)"

    split = "p > 0 AND f > 0"
    judged = f"panel = 'pass' OR panel = 'fail' OR ({split})"
    compared = "human IS NOT NULL AND (panel = 'pass' OR panel = 'fail')"
    found = items.execute(
        f"""SELECT criterion_id, {count("outcome = 'pass'")}, {count("outcome = 'fail'")},
                   {count(split)}, {count(judged)}, {count(compared)},
                   {count(f"{compared} AND panel <> human")},
                   COUNT(DISTINCT CASE WHEN outcome = 'pass' THEN system_id END),
                   COUNT(DISTINCT CASE WHEN outcome = 'pass' OR outcome = 'fail'
                                       THEN system_id END)
            FROM {{items}} items GROUP BY criterion_id"""  # noqa: S608
    )
    return [am.CriterionItems(*r) for r in found]


def _labelled(
    items_: _Items, run: Run
) -> tuple[list[Item], dict[tuple[int, int], CalibrationItem], dict[int, tuple[str, ...]]]:
    """The labelled items, each judge's label on them (the majority of its valid samples)
    beside the human reference (the judge calibration's item-level pairs), and their
    criteria's source types. Two queries."""
    through = Criterion.source_types.through
    source_table = through._meta.get_field("sourcetype").related_model._meta.db_table
    rows = items_.execute(
        f"""SELECT i.answer_id, i.criterion_id, i.checklist_id, i.kind, i.panel, i.outcome,
                   i.adjudicated, i.p, i.f, i.human, s.name
            FROM {{items}} i
            LEFT JOIN {through._meta.db_table} cs ON cs.criterion_id = i.criterion_id
            LEFT JOIN {source_table} s ON s.id = cs.sourcetype_id
            WHERE i.human IS NOT NULL
            ORDER BY i.answer_id, i.criterion_id"""  # noqa: S608
    )
    found: dict[tuple[int, int], Item] = {}
    names: dict[int, set[str]] = defaultdict(set)
    for a, c, cl, kind, panel, outcome, adj, p, f, human, source in rows:
        if (a, c) not in found:  # one row per source type of the criterion
            found[a, c] = Item(a, c, cl, kind, panel, outcome, bool(adj), p > 0 and f > 0, human)
        if source is not None:
            names[c].add(source)
    items = list(found.values())
    sources = {c: tuple(sorted(n)) for c, n in names.items()}
    if not items:
        return items, {}, sources
    references = {(i.answer_id, i.criterion_id): i.human for i in items}
    votes = items_.execute(
        f"""SELECT v.answer_id, v.criterion_id, j.name,
                   SUM(CASE WHEN v.outcome = 'pass' THEN 1 ELSE 0 END),
                   SUM(CASE WHEN v.outcome = 'fail' THEN 1 ELSE 0 END)
            FROM {Verdict._meta.db_table} v
            JOIN {{items}} i ON i.answer_id = v.answer_id AND i.criterion_id = v.criterion_id
            JOIN {Judge._meta.db_table} j ON j.id = v.judge_id
            WHERE v.run_id = %s AND i.human IS NOT NULL
            GROUP BY v.answer_id, v.criterion_id, j.name
            ORDER BY v.answer_id, v.criterion_id, j.name""",  # noqa: S608
        [run.pk],
    )
    tallies: dict[tuple[int, int], dict[str, str | None]] = defaultdict(dict)
    for answer_id, criterion_id, judge, p, f in votes:
        tallies[answer_id, criterion_id][judge] = "pass" if p > f else "fail" if f > p else None
    calibration = {key: CalibrationItem(references[key], judges) for key, judges in tallies.items()}
    return items, calibration, sources


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
    # From the items counted per (answer, checklist, kind) and per (answer, checklist,
    # source type), answer by answer, checklists in order: the share of each checklist's
    # decided items passed, then their mean per group. "all" and the answer's category
    # hold the same checklists; a group counts a checklist only where it has a decided item.
    bucket_of = {c: am.bucket_of(n, data.buckets).key for c, n in data.checklist_size.items()}
    answers = data.answers
    checklists: dict[int, dict[int, list[int]]] = {}
    by_kind: dict[int, dict[tuple[str, int], list[int]]] = {}
    for a, c, kind, passed, decided, _ in data.groups:
        if not decided or a not in answers:
            continue
        t = checklists.setdefault(a, {}).setdefault(c, [0, 0])
        t[0] += passed
        t[1] += decided
        by_kind.setdefault(a, {})[kind, c] = [passed, decided]
    by_source: dict[int, dict[tuple[str, int], list[int]]] = {}
    for a, c, source, passed, decided in data.source_groups:
        if decided and a in answers:
            t = by_source.setdefault(a, {}).setdefault((source or NO_VALUE, c), [0, 0])
            t[0] += passed
            t[1] += decided
    out: dict[tuple[int, str, str], float] = {}
    for a, tallies in checklists.items():
        ratios: dict[tuple[str, str], list[float]] = defaultdict(list)
        for c, (passed, decided) in tallies.items():
            ratios["all", ""].append(passed / decided)
            ratios["bucket", bucket_of[c]].append(passed / decided)
        for (kind, _), (passed, decided) in by_kind[a].items():
            ratios["kind", kind].append(passed / decided)
        for (source, _), (passed, decided) in by_source.get(a, {}).items():
            ratios["source", source].append(passed / decided)
        for (group, value), v in ratios.items():
            out[a, group, value] = sum(v) / len(v)
        out[a, "category", answers[a].category] = out[a, "all", ""]
    return out


def _overall_shares(data: RunData) -> dict[tuple[int, str, str], float]:
    """`_compute_shares` of the group "all" alone (the same sums in the same order)."""
    checklists: dict[int, dict[int, list[int]]] = {}
    for a, c, _, passed, decided, _ in data.groups:
        if decided and a in data.answers:
            t = checklists.setdefault(a, {}).setdefault(c, [0, 0])
            t[0] += passed
            t[1] += decided
    out = {}
    for a, tallies in checklists.items():
        v = [passed / decided for passed, decided in tallies.values()]
        out[a, "all", ""] = sum(v) / len(v)
    return out


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
    judge-only, human-only and PPI++, each clustered by query. Under the "least certain"
    label policy the labelled answers were drawn with unequal chances
    (evaluation.review.sampling), so PPI++ weighs each by the inverse of its chance
    (`ppi_mean_weighted`); under the others they are a simple random draw (`ppi_mean`)."""
    design = review_selectors.labelling_design(data.run.dataset)
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
    for a, c, _, passed, decided, _ in data.groups:
        if a not in data.answers:
            continue
        t = tally[a, c]
        t[0] += passed
        t[1] += decided
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
    if data.overall is None:
        shares = data.shares if data.shares is not None else _overall_shares(data)
        data.overall = [(a, share) for (a, group, _), share in shares.items() if group == "all"]
    per_query: dict[int, list[tuple[float, int]]] = defaultdict(list)
    for answer_id, share in data.overall:
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
    """Counted per criterion in SQL (`load_run` with HEALTH)."""
    if data.health is None:
        raise ValueError("criterion health needs load_run(..., parts=[HEALTH])")
    return am.criterion_health(data.health)


# -- judge calibration: which panel agrees best with people ---------------------------------


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


def panel_calibration(
    data: RunData, items: dict[tuple[int, int], CalibrationItem] | None = None
) -> list[PanelOption]:
    """Every subset of the run's judges × voting rule against the human reference on the
    labelled items, best first, with each judge's cost in this run. Two queries when the
    run's token sums are kept."""
    items = calibration_items(data) if items is None else items
    if not items:
        return []
    run = data.run
    # The token sums scan every verdict of the run (a second at 600,000) and move only
    # with the run's state: kept per state, so a miss after a label does not pay them.
    if run.ended:
        state = readers.state(run.dataset_id, readers.VERDICT_TOKENS, run=run)
        sums = kept_figures.remembered(state, lambda: _verdict_tokens(run))
    else:
        sums = _verdict_tokens(run)
    judges = {j.pk: j for j in Judge.objects.filter(pk__in=[judge_id for judge_id, _, _ in sums])}
    tokens = {
        judges[judge_id].name: (
            prompt,
            completion,
            judges[judge_id].kind,
            judges[judge_id].prompt_price,
            judges[judge_id].completion_price,
        )
        for judge_id, prompt, completion in sums
    }
    costs = {
        name: JudgeUsage(name, kind == Judge.Kind.LLM, pt, ct, pp, cp).cost()
        for name, (pt, ct, kind, pp, cp) in tokens.items()
    }
    return panel_options(items.values(), costs)


def _verdict_tokens(run: Run) -> list[list[int]]:
    """[judge id, prompt tokens, completion tokens] over the run's verdicts."""
    return [
        [judge_id, prompt or 0, completion or 0]
        for judge_id, prompt, completion in Verdict.objects.filter(run=run)
        .values("judge_id")
        .annotate(pt=Sum("prompt_tokens"), ct=Sum("completion_tokens"))
        .order_by()
        .values_list("judge_id", "pt", "ct")
    ]


# -- saturation ------------------------------------------------------------------------------


def saturated(data: RunData) -> list[int]:
    """Queries every system of the run answers fully (too easy)."""
    scores: dict[int, dict[int, float]] = defaultdict(dict)
    for system_id, _ in systems_of(data):
        for query_id, (score, _) in query_scores(data, system_id).items():
            scores[query_id][system_id] = score
    return am.saturated_queries(scores)
