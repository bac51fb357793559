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

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import fields

from django.db import connection, transaction
from django.db.models import Sum

from annotation.models import Checklist, Criterion, Query
from evaluation.analytics import summaries
from evaluation.analytics.summaries import (
    NO_VALUE,
    PAGE_RESAMPLES,
    AnswerInfo,
    Calibrated,
    Cell,
    ComplexityCurve,
    Item,
    PanelCounts,
    RunData,
    calibration_items,
)
from evaluation.answers.models import Answer
from evaluation.checks.models import CriterionCheck
from evaluation.cross_evaluation.selectors import dataset_mean_overlap
from evaluation.judges.models import Judge
from evaluation.judges.tuning import excluded_items
from evaluation.kept import figures as kept_figures
from evaluation.kept import readers
from evaluation.labels.models import Adjudication, HumanLabel
from evaluation.metrics import analytics as am
from evaluation.metrics import rubrics, rubrics_sql, votes_sql
from evaluation.metrics.calibration import CalibrationItem, PanelOption, panel_options
from evaluation.metrics.cost import JudgeUsage
from evaluation.metrics.overlap import Interval
from evaluation.review import selectors as review_selectors
from evaluation.runs import trees
from evaluation.runs.models import Run, Verdict

# What a caller may ask `load_run` for besides the scores (always loaded).
HEALTH, LABELLED = "health", "labelled"


ITEMS_TABLE = "analytics_run_items"
# Tool-use and grounding criteria are reported apart from content criteria, as kinds of
# their own: a criterion decided by a trajectory check (evaluation.checks.trajectory) is
# "tool use", one judged against the retrieved context is "grounding" (docs/judging.md).
CHECKED_KIND = (
    "CASE WHEN cc.kind <> '' THEN 'tool use' WHEN cc.evidence = 'context' THEN 'grounding' "
    "ELSE c.kind END"
)


def _items_select(run: Run, queries: Sequence[int] | None) -> tuple[str, list]:
    """One row per scored (answer, criterion) of the run, with its panel verdict, decided
    outcome and human reference: the SELECT and its parameters."""
    t = {
        m: m._meta.db_table
        for m in (
            Verdict, Answer, Criterion, Checklist, Query, HumanLabel, Adjudication,
            CriterionCheck,
        )
    }  # fmt: skip
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
    # The human reference: the adjudication, else the reviewers' majority label.
    human = votes_sql.majority_label("hp", "hf")
    # Votes grouped by item alone (the verdicts' index gives them in item order), then
    # joined to the item's answer, criterion, adjudication and human labels (the labels
    # grouped per item over the dataset: a few per labelled item).
    return (
        f"""
        SELECT answer_id, criterion_id, system_id, query_id, checklist_id, kind, group_id,
               weight, p, f, panel,
               COALESCE(adjudication, panel) AS outcome,
               CASE WHEN adjudication IS NULL THEN 0 ELSE 1 END AS adjudicated,
               COALESCE(adjudication, {human}) AS human
        FROM (
            SELECT votes.*, a.system_id, a.query_id, c.checklist_id, {CHECKED_KIND} AS kind,
                   c.group_id, c.weight, {panel} AS panel,
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
            LEFT JOIN {t[CriterionCheck]} cc ON cc.criterion_id = c.id
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

    def __init__(
        self, cursor, run: Run, queries: Sequence[int] | None, *, temporary: bool = True
    ) -> None:
        self.cursor = cursor
        select, params = _items_select(run, queries)
        self.temporary = temporary and not kept_figures.writes_refused()
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
    # One transaction: the temporary table lives and dies inside it, even behind a
    # transaction-pooling proxy that may hand each statement outside one to another session.
    with transaction.atomic(), connection.cursor() as cursor:
        items = _Items(cursor, run, queries)
        try:
            found = items.execute(
                f"""SELECT answer_id, checklist_id, kind, group_id, SUM({PASSED}),
                           SUM({DECIDED}), COUNT(*), SUM(adjudicated),
                           SUM(CASE WHEN human IS NULL THEN 0 ELSE 1 END), {RUBRIC_SUMS}
                    FROM {{items}} items GROUP BY answer_id, checklist_id, kind, group_id
                    ORDER BY answer_id, checklist_id, kind, group_id"""  # noqa: S608
            )
            rows, rubric = _by_kind(found)
            groups = [r[:6] for r in rows]  # plain tuples: tens of thousands
            source_groups, rubric_sources = _source_groups(items)
            checklist_size = dict(
                items.execute(
                    """SELECT checklist_id, COUNT(DISTINCT criterion_id) FROM {items} items
                       GROUP BY checklist_id"""
                )
            )
            panel_counts = _panel_counts(items)
            scorings, undecided_as, checklist_trees, on_items = _strategies(run, checklist_size)
            answer_values = (
                None
                if on_items
                else _answer_values(
                    items, scorings, undecided_as, checklist_trees, run.dataset.blend_weight
                )
            )
            health = _health_counts(items) if HEALTH in parts else None
            labelled_items = calibration = None
            sources: dict[int, tuple[str, ...]] = {}
            if LABELLED in parts:
                labelled_items, calibration, sources = _labelled(items, run)
        finally:
            items.drop()
    answers = _run_answers(verdicts)
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
        rubric=rubric,
        rubric_sources=rubric_sources,
        scorings=scorings,
        undecided_as=undecided_as,
        trees=checklist_trees,
        blend_weight=run.dataset.blend_weight,
        dimensions=dict(run.dataset.dimensions or {}),
        answer_values=answer_values,
    )


def health_counts(run: Run, *, queries: Sequence[int]) -> list[am.CriterionItems]:
    """The criterion-health counts of the answers to `queries` alone, as `load_run` with
    HEALTH counts them: one aggregate over the items as a subquery. The checklist editor
    asks for one query's criteria on every view; a temporary table there (catalog writes,
    a transaction) cost more than the one aggregate it would serve."""
    with connection.cursor() as cursor:
        return _health_counts(_Items(cursor, run, queries, temporary=False))


DECIDED = "CASE WHEN outcome = 'pass' OR outcome = 'fail' THEN 1 ELSE 0 END"
PASSED = "CASE WHEN outcome = 'pass' THEN 1 ELSE 0 END"


# What the scoring strategies read of a group's items (rubrics.GroupCounts, counted from
# the one satisfied rule by rubrics_sql, as the run scores count them) under the decided
# outcome, the panel's verdict or the human reference.
def rubric_sums(outcome: str = "outcome") -> str:
    return ", ".join(rubrics_sql.group_counts(outcome, "weight"))


RUBRIC_SUMS = rubric_sums()


def _by_kind(found: list[tuple]) -> tuple[list[tuple], dict]:
    """The rows per (answer, checklist, kind, group) as rows per (answer, checklist, kind)
    (passed, decided, items, adjudicated, labelled summed over groups), and the groups'
    counts for the strategies: (answer, checklist) -> kind -> group key -> GroupCounts."""
    rows: list[list] = []
    rubric: dict[tuple[int, int], dict[str, dict[str | None, rubrics.GroupCounts]]] = {}
    for a, c, kind, group_id, passed, decided, n, adjudicated, labelled, *sums in found:
        if rows and rows[-1][:3] == [a, c, kind]:
            last = rows[-1]
            for i, v in enumerate((passed, decided, n, adjudicated, labelled), start=3):
                last[i] += v
        else:
            rows.append([a, c, kind, passed, decided, n, adjudicated, labelled])
        by_kind = rubric.setdefault((a, c), {}).setdefault(kind, {})
        by_kind[trees.group_key(group_id)] = rubrics_sql.counts_of(sums)
    return [tuple(r) for r in rows], rubric


def _source_groups(items: _Items) -> tuple[list[tuple], dict]:
    """(answer, checklist, source type, passed, decided) over the decided items, and the
    groups' counts for the strategies: (answer, checklist) -> source -> group -> counts."""
    through = Criterion.source_types.through
    source_table = through._meta.get_field("sourcetype").related_model._meta.db_table
    found = items.execute(
        f"""SELECT i.answer_id, i.checklist_id, s.name, i.group_id, SUM({PASSED}),
                   SUM({DECIDED}), {RUBRIC_SUMS}
            FROM {{items}} i
            LEFT JOIN {through._meta.db_table} cs ON cs.criterion_id = i.criterion_id
            LEFT JOIN {source_table} s ON s.id = cs.sourcetype_id
            WHERE i.outcome = 'pass' OR i.outcome = 'fail'
            GROUP BY i.answer_id, i.checklist_id, s.name, i.group_id
            ORDER BY i.answer_id, i.checklist_id, s.name, i.group_id"""  # noqa: S608
    )
    rows: list[list] = []
    rubric: dict[tuple[int, int], dict[str, dict[str | None, rubrics.GroupCounts]]] = {}
    for a, c, source, group_id, passed, decided, *sums in found:
        if rows and rows[-1][:3] == [a, c, source]:
            rows[-1][3] += passed
            rows[-1][4] += decided
        else:
            rows.append([a, c, source, passed, decided])
        by_source = rubric.setdefault((a, c), {}).setdefault(source or NO_VALUE, {})
        by_source[trees.group_key(group_id)] = rubrics_sql.counts_of(sums)
    return [tuple(r) for r in rows], rubric


def _strategies(
    run: Run, checklist_ids: Iterable[int]
) -> tuple[dict[int, str], dict[int, str], dict, bool]:
    """Each checklist's strategy and undecided setting (its own, else the dataset's), its
    groups' tree, and whether every score is on the item scale (every checklist scored by
    its share, undecided criteria left out, no penalty): three queries, none when the run
    graded no checklist."""
    ids = list(checklist_ids)
    if not ids:
        return {}, {}, {}, True
    own = Checklist.objects.filter(pk__in=ids).values_list("pk", "scoring", "undecided")
    scorings, undecided_as = {}, {}
    for pk, scoring, undecided in own:
        scorings[pk] = trees.strategy_of(run.dataset, scoring)
        undecided_as[pk] = trees.undecided_of(run.dataset, undecided)
    on_items = (
        all(s == rubrics.DEFAULT_STRATEGY for s in scorings.values())
        and all(u == rubrics.EXCLUDED for u in undecided_as.values())
        and not Criterion.objects.filter(checklist_id__in=ids, weight__lt=0).exists()
    )
    return scorings, undecided_as, trees.trees_of(ids), on_items


def _answer_values(
    items: _Items,
    scorings: dict[int, str],
    undecided_as: dict[int, str],
    checklist_trees: dict,
    blend_weight: float,
) -> dict[int, tuple[float | None, float | None]]:
    """answer -> (its value under the panel's verdicts, under the human reference where
    every scored item of the answer has one, else None): PPI++ on the strategies' scale
    (summaries.calibrated_scores). The value of an answer is the mean over its
    checklists, as everywhere."""
    found = items.execute(
        f"""SELECT answer_id, checklist_id, group_id, {rubric_sums("panel")},
                   SUM(CASE WHEN human IS NULL THEN 1 ELSE 0 END), {rubric_sums("human")}
            FROM {{items}} items GROUP BY answer_id, checklist_id, group_id
            ORDER BY answer_id, checklist_id, group_id"""  # noqa: S608
    )
    panel: dict[tuple[int, int], dict] = {}
    human: dict[tuple[int, int], dict] = {}
    unlabelled: dict[int, int] = defaultdict(int)
    width = len(fields(rubrics.GroupCounts))
    for a, c, group_id, *sums in found:
        key = trees.group_key(group_id)
        panel.setdefault((a, c), {})[key] = rubrics_sql.counts_of(sums[:width])
        human.setdefault((a, c), {})[key] = rubrics_sql.counts_of(sums[width + 1 :])
        unlabelled[a] += sums[width]

    def value(counts: dict, c: int) -> float | None:
        return rubrics.value_counted(
            counts, checklist_trees.get(c, rubrics.EMPTY_TREE),
            scorings.get(c, rubrics.DEFAULT_STRATEGY), blend_weight=blend_weight,
            undecided=undecided_as.get(c, rubrics.DEFAULT_UNDECIDED),
        )  # fmt: skip

    by_answer: dict[int, tuple[list, list]] = {}
    for (a, c), counts in panel.items():
        judged, labelled = by_answer.setdefault(a, ([], []))
        judged.append(value(counts, c))
        labelled.append(value(human[a, c], c))
    return {
        a: (_mean(judged), None if unlabelled[a] else _mean(labelled))
        for a, (judged, labelled) in by_answer.items()
    }


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _panel_counts(items: _Items) -> list[PanelCounts]:
    """Per answer, its items with a panel verdict and the labelled ones by (human, panel)."""

    def both(h: str, p: str) -> str:
        return f"SUM(CASE WHEN human = '{h}' AND panel = '{p}' THEN 1 ELSE 0 END)"

    found = items.execute(
        f"""SELECT answer_id, COUNT(*), SUM(CASE WHEN panel = 'pass' THEN 1 ELSE 0 END),
                   {both("pass", "pass")}, {both("pass", "fail")},
                   {both("fail", "pass")}, {both("fail", "fail")}
            FROM {{items}} items WHERE panel = 'pass' OR panel = 'fail'
            GROUP BY answer_id ORDER BY answer_id"""  # noqa: S608
    )
    return [PanelCounts(*r) for r in found]


def _run_answers(verdicts) -> dict[int, AnswerInfo]:
    """The answers the run graded, with their query, system and category."""
    found = Answer.objects.filter(pk__in=verdicts.values("answer_id")).values_list(
        "pk", "query_id", "system_id", "system__name", "system__version",
        "query__category__name", "query__dimensions",
    )  # fmt: skip
    return {
        pk: AnswerInfo(
            pk,
            query_id,
            system_id,
            f"{name} {version}".strip(),
            category or NO_VALUE,
            tuple(sorted((str(k), str(v)) for k, v in (dimensions or {}).items())),
        )
        for pk, query_id, system_id, name, version, category, dimensions in found
    }


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
    # Each judge's label: the majority of its valid samples, NULL on a tie.
    judge_label = votes_sql.majority_label(
        "SUM(CASE WHEN v.outcome = 'pass' THEN 1 ELSE 0 END)",
        "SUM(CASE WHEN v.outcome = 'fail' THEN 1 ELSE 0 END)",
    )
    votes = items_.execute(
        f"""SELECT v.answer_id, v.criterion_id, j.name, {judge_label}
            FROM {Verdict._meta.db_table} v
            JOIN {{items}} i ON i.answer_id = v.answer_id AND i.criterion_id = v.criterion_id
            JOIN {Judge._meta.db_table} j ON j.id = v.judge_id
            WHERE v.run_id = %s AND i.human IS NOT NULL
            GROUP BY v.answer_id, v.criterion_id, j.name
            ORDER BY v.answer_id, v.criterion_id, j.name""",  # noqa: S608
        [run.pk],
    )
    tallies: dict[tuple[int, int], dict[str, str | None]] = defaultdict(dict)
    for answer_id, criterion_id, judge, label in votes:
        tallies[answer_id, criterion_id][judge] = label
    # Items the run's judges were shown as worked examples measure nothing of them: out of
    # the judge agreement and calibration, as out of every agreement figure of the run.
    shown = excluded_items(run)
    calibration = {
        key: CalibrationItem(references[key], judges)
        for key, judges in tallies.items()
        if key not in shown
    }
    return items, calibration, sources


# -- system scores by group ------------------------------------------------------------


# -- human-calibrated scores (PPI++) -------------------------------------------------------


# -- the complexity curve ---------------------------------------------------------------


# -- run comparison ------------------------------------------------------------------------


# -- criterion health ----------------------------------------------------------------------


# -- judge calibration: which panel agrees best with people ---------------------------------


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


# -- figures that read more than the loaded run ------------------------------------------


def calibrated_scores(data: RunData, *, resamples: int = PAGE_RESAMPLES) -> list[Calibrated]:
    """`summaries.calibrated_scores` under the dataset's labelling design (one query)."""
    design = review_selectors.labelling_design(data.run.dataset)
    return summaries.calibrated_scores(data, design, resamples=resamples)


def complexity_curve(
    data: RunData, cells: Iterable[Cell], *, human: Interval | None = None
) -> ComplexityCurve:
    """`summaries.complexity_curve` with the human line: the dataset's mean overlap between
    experts unless one is given."""
    if human is None:
        human = dataset_mean_overlap(data.run.dataset)
    return summaries.complexity_curve(data, cells, human=human)
