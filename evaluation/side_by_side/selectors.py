"""Reads of the side-by-side comparison: each side's answers and scores from its run's kept
scores (one piece of every answer's score per run, never a recount: runs.scores), the
queries a category or dimension filter keeps, and for the shown page only, the answers,
their kept reports and each criterion's outcome on both sides.

Every verdict read names its run and the shown answers: the page reads the two runs shown
and nothing else, whatever the size of the dataset (bench/web's side-by-side page at a
million verdicts)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from django.db import connection
from django.db.models import Prefetch, Q

from annotation.models import Checklist, Criterion, Dataset, Query
from evaluation.answers.models import Answer
from evaluation.answers.view import AnswerView, answer_view
from evaluation.metrics import rubrics, votes_sql
from evaluation.runs import trees
from evaluation.runs.models import Run
from evaluation.runs.scores import AnswerReport, ChecklistResult, RunScores
from evaluation.side_by_side import pairing
from evaluation.side_by_side.pairing import Pair, Paired

NOT_JUDGED = ("not judged", "none")  # a criterion without a verdict on that side: (word, css)


@dataclass(frozen=True)
class Side:
    """One side of the comparison: a run, and the system whose answers it shows."""

    run: Run
    system_id: int
    system: str  # name and version


def systems_of(kept: RunScores) -> list[tuple[int, str]]:
    """The systems a run scored, (id, name and version), from its kept summary (no query)."""
    return [(s.system_id, s.system) for s in kept.systems]


@dataclass(frozen=True)
class QueryFilter:
    """The queries kept by category and dimension; None: any."""

    category: int | None = None
    dimension: tuple[str, str] | None = None  # (name, value) among the dataset's declared

    def __bool__(self) -> bool:
        return self.category is not None or self.dimension is not None


def matching_queries(dataset: Dataset, wanted: QueryFilter) -> set[int] | None:
    """The ids of the dataset's queries the filter keeps (one query); None without one."""
    if not wanted:
        return None
    found = Query.objects.filter(dataset=dataset)
    if wanted.category is not None:
        found = found.filter(category_id=wanted.category)
    if wanted.dimension is not None:
        # Read in Python from the queries' dimensions (a small object each, a few thousand
        # queries): SQLite's JSON path refuses some keys ("malformed JSON"), and a lookup
        # path "dimensions__<name>" would read "__" in a name as a path.
        name, value = wanted.dimension
        return {
            pk
            for pk, dimensions in found.values_list("pk", "dimensions")
            if isinstance(dimensions, dict) and _text(dimensions.get(name)) == value
        }
    return set(found.values_list("pk", flat=True))


def _text(value: object) -> str | None:
    """A dimension's value as the filter compares it: its text, as PostgreSQL's ->> gives
    it (a number's digits, true/false), None when absent."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def paired(side_a: Side, scores_a: RunScores, side_b: Side, scores_b: RunScores) -> Paired:
    """Each query's answer on both sides, from the runs' kept briefs (a read per run)."""
    briefs_a = scores_a.briefs()
    # Two systems of one run: its briefs read once.
    briefs_b = briefs_a if scores_b is scores_a else scores_b.briefs()
    answers_a = [b for b in briefs_a if b.system_id == side_a.system_id]
    answers_b = [b for b in briefs_b if b.system_id == side_b.system_id]
    return pairing.pair_by_query(answers_a, answers_b)


@dataclass(frozen=True)
class CriterionRow:
    """A criterion with its outcome on each side: the run's verdict (its panel's method as
    started), an adjudication replacing it as in the scores; None: not judged there."""

    criterion: Criterion
    outcome_a: str | None
    outcome_b: str | None
    difference: str  # pairing.DIFFERENCES
    position: tuple  # the checklist's order: (checklist, position, id)

    @property
    def shown_a(self) -> tuple[str, str]:
        return _shown(self.outcome_a, self.criterion)

    @property
    def shown_b(self) -> tuple[str, str]:
        return _shown(self.outcome_b, self.criterion)

    @property
    def difference_label(self) -> str:
        return pairing.DIFFERENCE_LABELS[self.difference]


def _shown(outcome: str | None, criterion: Criterion) -> tuple[str, str]:
    if outcome is None:
        return NOT_JUDGED
    return rubrics.outcome_shown(outcome, criterion.is_penalty)


@dataclass(frozen=True)
class ChecklistPair:
    """One checklist's scores on both sides (None: not scored on that side)."""

    checklist_id: int
    author: str
    a: ChecklistResult | None
    b: ChecklistResult | None

    @property
    def groups(self) -> list[tuple[str, object, object]]:
        """(title, group score on A, on B) for each group, in reading order."""
        by_a = {g.key: g for g in (self.a.groups if self.a else ())}
        by_b = {g.key: g for g in (self.b.groups if self.b else ())}
        keys = list(by_a) + [k for k in by_b if k not in by_a]
        return [((by_a.get(k) or by_b[k]).title, by_a.get(k), by_b.get(k)) for k in keys]


@dataclass
class PairDetail:
    pair: Pair
    query: Query
    answer_a: Answer
    answer_b: Answer
    view_a: AnswerView
    view_b: AnswerView
    report_a: AnswerReport | None
    report_b: AnswerReport | None
    criteria: list[CriterionRow]
    checklists: list[ChecklistPair]
    counts: Counter = field(default_factory=Counter)  # difference -> criteria

    @property
    def differing(self) -> int:
        return self.counts[pairing.A_MEETS] + self.counts[pairing.B_MEETS]


def pair_details(dataset: Dataset, side_a: Side, side_b: Side, scores_a: RunScores,
                 scores_b: RunScores, pairs: list[Pair]) -> list[PairDetail]:  # fmt: skip
    """The shown page's pairs in full. Whatever the page's length: one query for the
    answers, one per run for the outcomes, two for the criteria and their checklists, and
    the kept reports of the shown answers (two reads per run)."""
    if not pairs:
        return []
    ids_a = [p.a.answer_id for p in pairs]
    ids_b = [p.b.answer_id for p in pairs]
    answers = Answer.objects.select_related("query__category", "system").in_bulk(
        set(ids_a) | set(ids_b)
    )
    reports_a, reports_b = scores_a.of_answers(ids_a), scores_b.of_answers(ids_b)
    outcomes_a = outcomes(side_a.run, ids_a)
    outcomes_b = outcomes(side_b.run, ids_b)
    judged = {c for _, c in outcomes_a} | {c for _, c in outcomes_b}
    criteria_of: dict[int, list[Criterion]] = {}
    for criterion in shown_criteria([p.query_id for p in pairs], judged):
        criteria_of.setdefault(criterion.checklist.query_id, []).append(criterion)
    details = []
    for pair in pairs:
        a, b = answers[pair.a.answer_id], answers[pair.b.answer_id]
        rows = []
        for criterion in criteria_of.get(pair.query_id, []):
            setting = trees.undecided_of(dataset, criterion.checklist.undecided)
            outcome_a = outcomes_a.get((a.pk, criterion.pk))
            outcome_b = outcomes_b.get((b.pk, criterion.pk))
            rows.append(
                CriterionRow(
                    criterion, outcome_a, outcome_b,
                    pairing.compare_outcomes(
                        _satisfied(outcome_a, criterion, setting),
                        _satisfied(outcome_b, criterion, setting),
                    ),
                    (criterion.checklist_id, criterion.position, criterion.pk),
                )
            )  # fmt: skip
        rows = pairing.differing_first(rows)
        report_a, report_b = reports_a.get(a.pk), reports_b.get(b.pk)
        details.append(
            PairDetail(
                pair,
                a.query,
                a,
                b,
                answer_view(a),
                answer_view(b),
                report_a,
                report_b,
                rows,
                _checklists(report_a, report_b, criteria_of.get(pair.query_id, [])),
                Counter(r.difference for r in rows),
            )
        )
    return details


def _satisfied(outcome: str | None, criterion: Criterion, setting: str) -> bool | None:
    """The one satisfied rule (rubrics.satisfied) under the checklist's undecided setting;
    None for a criterion not judged on the side (the scores do not count it either)."""
    if outcome is None:
        return None
    return rubrics.satisfied(outcome, criterion.weight, setting)


def _checklists(
    a: AnswerReport | None, b: AnswerReport | None, criteria: list[Criterion]
) -> list[ChecklistPair]:
    by_a = {c.checklist_id: c for c in (a.checklists if a else ())}
    by_b = {c.checklist_id: c for c in (b.checklists if b else ())}
    # The kept reports are read without authors (runs.scores.of_answers): the criteria's
    # checklists, loaded with them, name them.
    authors = {c.checklist_id: c.checklist.author.get_username() for c in criteria}
    return [
        ChecklistPair(pk, authors.get(pk, ""), by_a.get(pk), by_b.get(pk))
        for pk in sorted(by_a.keys() | by_b.keys())
    ]


def shown_criteria(query_ids: list[int], judged: set[int]) -> list[Criterion]:
    """The scored criteria of the queries' submitted checklists as they stand, plus any
    archived one a run judged (a run keeps what it was started with). Two queries: the
    criteria, then their checklists with their authors, one instance each shared by its
    criteria (a join would build a checklist and a user per criterion: two thirds of the
    model instances a page of 400 criteria made)."""
    return list(
        Criterion.objects.filter(
            Q(archived_at__isnull=True) | Q(pk__in=sorted(judged)),
            checklist__query_id__in=query_ids,
            checklist__status=Checklist.Status.SUBMITTED,
            scoring_enabled=True,
        )
        .prefetch_related(Prefetch("checklist", Checklist.objects.select_related("author")))
        .order_by("checklist_id", "position", "id")
    )


# Each (answer, criterion) of the run and the shown answers: the votes counted, turned into
# the run's verdict by the SQL form of its panel's method (metrics.votes_sql, as the run's
# scores count them), an adjudication replacing it.
_OUTCOMES_SQL = """
SELECT iv.answer_id, iv.criterion_id, coalesce(d.label, {panel})
FROM (
  SELECT v.answer_id, v.criterion_id,
         sum(CASE WHEN v.outcome = 'pass' THEN 1 ELSE 0 END) AS p,
         sum(CASE WHEN v.outcome = 'fail' THEN 1 ELSE 0 END) AS f
  FROM evaluation_verdict v
  WHERE v.run_id = %s AND v.answer_id IN ({answers})
  GROUP BY v.answer_id, v.criterion_id
) iv
LEFT JOIN evaluation_adjudication d
  ON d.answer_id = iv.answer_id AND d.criterion_id = iv.criterion_id
"""


def outcomes(run: Run, answer_ids: list[int]) -> dict[tuple[int, int], str]:
    """(answer, criterion) -> 'pass', 'fail' or 'undecided' in `run`, for these answers."""
    if not answer_ids:
        return {}
    ids = sorted(set(answer_ids))
    sql = _OUTCOMES_SQL.format(
        panel=votes_sql.panel_outcome(run.panel_method, run.panel_threshold, "iv.p", "iv.f"),
        answers=", ".join(["%s"] * len(ids)),
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [run.pk, *ids])
        return {(answer, criterion): outcome for answer, criterion, outcome in cursor.fetchall()}
