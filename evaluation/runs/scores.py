"""A run's scores, read from the database: per answer (per checklist and averaged over the
query's checklists, pass/fail against the dataset's threshold, the graded 1–5 mean) and per
system (means and pass rate).

Votes are aggregated per criterion with the run's method (its panel snapshot, never the
panel's current settings); an adjudication on (answer, criterion) replaces that verdict.
The votes are counted in the database, per answer and checklist; the shares are computed
from those counts (metrics.scoring.score_counted, equal to score_answer).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal

from django.db import connection, transaction

from annotation.models import Checklist
from evaluation import figure_cache, votes_sql
from evaluation.metrics.scoring import (
    AnswerScore,
    ScoreCounts,
    mean_score,
    passes_threshold,
    score_counted,
)
from evaluation.metrics.summary import graded_mean, mean, pass_rate
from evaluation.models import Answer, GradedScore, Run


@dataclass(frozen=True)
class ChecklistResult:
    checklist_id: int
    author: str
    score: AnswerScore


@dataclass(frozen=True)
class AnswerReport:
    answer_id: int
    query_id: int
    system_id: int
    system: str  # name and version
    system_name: str
    checklists: list[ChecklistResult]
    score: float | None  # mean over the query's checklists of the share of criteria passed
    weighted: float | None
    core: float | None
    undecided: int
    split: int  # criteria whose valid votes disagreed
    adjudicated: int  # criteria decided by an adjudication
    passed: bool | None  # score against the dataset's pass threshold; None: no threshold/score
    graded: float | None  # mean 1–5 grade: over each judge's samples, then over judges


@dataclass(frozen=True)
class SystemReport:
    system_id: int
    system: str
    answers: int
    score: float | None
    weighted: float | None
    core: float | None
    graded: float | None
    passed: int
    pass_rate: float | None  # among answers with a pass/fail


@dataclass(frozen=True)
class ScoreReport:
    threshold: float | None
    answers: list[AnswerReport]
    systems: list[SystemReport]


# Per (answer, checklist) of the run: the counts score_counted() needs over the enabled
# criteria, and the split and adjudicated criteria (all that have votes, as the page counts
# them). The votes are counted per criterion in the database and turned into the run's
# verdict by evaluation.votes_sql, the SQL form of metrics.aggregation.
_COUNTS_SQL = """
WITH iv AS (
  SELECT v.answer_id, v.criterion_id,
         sum(CASE WHEN v.outcome = 'pass' THEN 1 ELSE 0 END) AS p,
         sum(CASE WHEN v.outcome = 'fail' THEN 1 ELSE 0 END) AS f
  FROM evaluation_verdict v WHERE v.run_id = %(run)s
  GROUP BY v.answer_id, v.criterion_id
),
item AS (
  SELECT iv.answer_id, c.checklist_id, c.weight, c.is_core, c.scoring_enabled AS enabled,
         CASE WHEN iv.p > 0 AND iv.f > 0 THEN 1 ELSE 0 END AS split,
         CASE WHEN d.label IS NULL THEN 0 ELSE 1 END AS adjudicated,
         coalesce(d.label, {panel}) AS outcome
  FROM iv
  JOIN annotation_criterion c ON c.id = iv.criterion_id
  LEFT JOIN evaluation_adjudication d
    ON d.answer_id = iv.answer_id AND d.criterion_id = iv.criterion_id
)
SELECT answer_id, checklist_id,
  sum(CASE WHEN enabled AND outcome = 'pass' THEN 1 ELSE 0 END),
  sum(CASE WHEN enabled AND outcome = 'fail' THEN 1 ELSE 0 END),
  sum(CASE WHEN enabled AND outcome = 'undecided' THEN 1 ELSE 0 END),
  sum(CASE WHEN enabled AND outcome = 'pass' THEN weight ELSE 0 END),
  sum(CASE WHEN enabled AND outcome <> 'undecided' THEN weight ELSE 0 END),
  sum(CASE WHEN enabled AND is_core AND outcome = 'pass' THEN 1 ELSE 0 END),
  sum(CASE WHEN enabled AND is_core AND outcome <> 'undecided' THEN 1 ELSE 0 END),
  sum(split), sum(adjudicated)
FROM item GROUP BY answer_id, checklist_id
"""


def _counted(run: Run) -> list[tuple]:
    """(answer, checklist, ScoreCounts fields..., splits, adjudicated) rows of the run."""
    sql = _COUNTS_SQL.format(
        panel=votes_sql.panel_outcome(run.panel_method, run.panel_threshold, "iv.p", "iv.f")
    )
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # A million votes grouped: enough memory to keep the hash off the disk.
            with transaction.atomic():
                cursor.execute("SET LOCAL work_mem = '64MB'")
                cursor.execute(sql, {"run": run.pk})
                return cursor.fetchall()
        cursor.execute(sql, {"run": run.pk})
        return cursor.fetchall()


def _cached_counts(run: Run) -> list[tuple]:
    """_counted(run), from the figure cache while nothing it depends on has changed: a run
    that has ended keeps its votes until it is resumed, retried or imported again (which
    move its status, attempt or finish time); adjudications and criterion weights, core and
    scoring flags move the dataset's review revision (evaluation.agreement.revision)."""
    from evaluation.agreement.revision import current
    from evaluation.models import AgreementCache

    if not run.ended:
        return _counted(run)
    finished = run.finished_at.isoformat() if run.finished_at else ""
    prefix = f"scores-{run.pk}"
    key = (
        f"{prefix}:{run.status}:{run.attempt}:{finished}:{run.panel_method}:"
        f"{run.panel_threshold!r}:{current(run.dataset_id)}"
    )
    for rows in AgreementCache.objects.filter(dataset_id=run.dataset_id, key=key).values_list(
        "cells", flat=True
    ):
        return rows
    rows = [[int(v) if isinstance(v, int) else str(v) for v in row] for row in _counted(run)]
    figure_cache.store(run.dataset_id, prefix, key, rows)
    return rows


def run_report(run: Run) -> ScoreReport:
    """Every answer's and system's scores. Four queries whatever the size of the run: the
    votes are counted in the database (no vote reaches Python), and the counts of an ended
    run are kept in the figure cache until something they depend on changes."""
    per_checklist: dict[int, dict[int, AnswerScore]] = defaultdict(dict)
    splits: dict[int, int] = defaultdict(int)
    decided_by_adjudication: dict[int, int] = defaultdict(int)
    for answer_id, checklist_id, *counts, split, adjudicated in _cached_counts(run):
        per_checklist[answer_id][checklist_id] = score_counted(
            ScoreCounts(*(int(c) for c in counts[:3]), Decimal(str(counts[3])),
                        Decimal(str(counts[4])), int(counts[5]), int(counts[6]))
        )  # fmt: skip
        splits[answer_id] += int(split)
        decided_by_adjudication[answer_id] += int(adjudicated)
    grades: dict[int, dict[str, list[int | None]]] = defaultdict(lambda: defaultdict(list))
    graded_rows = GradedScore.objects.filter(run=run, outcome=GradedScore.Outcome.SCORED)
    for answer_id, judge_id, score in graded_rows.values_list("answer_id", "judge_id", "score"):
        grades[answer_id][str(judge_id)].append(score)
    authors = dict(
        Checklist.objects.filter(
            pk__in={c for own in per_checklist.values() for c in own}
        ).values_list("pk", "author__username")
    )

    threshold = run.dataset.pass_threshold
    # The answers with a vote or a grade, by id: an OR of two IN (subquery) over a million
    # verdicts is a per-row subplan in PostgreSQL, minutes at that size.
    answers = (
        Answer.objects.filter(pk__in=sorted(set(per_checklist) | set(grades)))
        .values_list("pk", "query_id", "system_id", "system__name", "system__version")
        .order_by("query_id", "system__name", "system__version", "pk")
    )
    reports = []
    for pk, query_id, system_id, name, version in answers:
        checklists = [
            ChecklistResult(checklist_id, authors.get(checklist_id) or "", score)
            for checklist_id, score in sorted(per_checklist.get(pk, {}).items())
        ]
        scores = [c.score for c in checklists]
        share = mean_score(scores)
        reports.append(
            AnswerReport(
                answer_id=pk,
                query_id=query_id,
                system_id=system_id,
                system=f"{name} {version}".strip(),
                system_name=name,
                checklists=checklists,
                score=share,
                weighted=mean_score(scores, "weighted_share"),
                core=mean_score(scores, "core_share"),
                undecided=sum(s.undecided for s in scores),
                split=splits[pk],
                adjudicated=decided_by_adjudication[pk],
                passed=passes_threshold(share, threshold) if threshold is not None else None,
                graded=graded_mean(grades[pk]) if pk in grades else None,
            )
        )
    return ScoreReport(threshold, reports, _by_system(reports))


def _by_system(answers: list[AnswerReport]) -> list[SystemReport]:
    grouped: dict[int, list[AnswerReport]] = defaultdict(list)
    for answer in answers:
        grouped[answer.system_id].append(answer)
    systems = [
        SystemReport(
            system_id=system_id,
            system=rows[0].system,
            answers=len(rows),
            score=mean(r.score for r in rows),
            weighted=mean(r.weighted for r in rows),
            core=mean(r.core for r in rows),
            graded=mean(r.graded for r in rows),
            passed=sum(r.passed is True for r in rows),
            pass_rate=pass_rate(r.passed for r in rows),
        )
        for system_id, rows in grouped.items()
    ]
    return sorted(systems, key=lambda s: s.system)
