"""A run's scores, read from the database: per answer (per checklist and averaged over the
query's checklists, pass/fail against the dataset's threshold, the graded 1–5 mean) and per
system (means and pass rate).

Votes are aggregated per criterion with the run's method (its panel snapshot, never the
panel's current settings); an adjudication on (answer, criterion) replaces that verdict.
The votes are counted in the database, per answer, checklist and group; the shares are
computed from those counts (metrics.scoring.share_score) and each checklist's strategy
value too (metrics.rubrics.score_counted), both from the one satisfied rule
(metrics.rubrics.satisfied, in SQL metrics.rubrics_sql), the undecided criteria counted as
each checklist's setting says (its own, else the dataset's: excluded or not met).
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, fields, replace
from datetime import datetime
from decimal import Decimal

from django.db import IntegrityError, connection, transaction

from annotation.models import Checklist
from evaluation.answers.models import Answer
from evaluation.kept import cold, readers, refresh, score_moves
from evaluation.kept import figures as kept_figures
from evaluation.kept.counters import Counters
from evaluation.labels.models import Adjudication
from evaluation.metrics import reliability, rubrics, rubrics_sql, votes_sql
from evaluation.metrics.rubrics import GroupScore
from evaluation.metrics.scoring import AnswerScore, mean_score, passes_threshold, share_score
from evaluation.metrics.summary import graded_mean, mean, pass_rate
from evaluation.runs import trees
from evaluation.runs.models import GradedScore, Run, RunArchive

logger = logging.getLogger(__name__)

# The shape of the kept counts and reports: moved when their columns change, so that rows
# kept by an earlier release are never read as this one's.
_SHAPE = "rubrics-4"  # 3: the undecided criteria counted and the undecided setting; the
# answers' index piece (INDEX); 4: the answers' sample and the systems' reliability


@dataclass(frozen=True)
class ChecklistResult:
    checklist_id: int
    author: str
    score: AnswerScore
    scoring: str = rubrics.DEFAULT_STRATEGY  # the strategy it is scored by
    value: float | None = None  # its score under that strategy
    groups: tuple[GroupScore, ...] = ()  # each group's score, in reading order
    undecided_as: str = rubrics.DEFAULT_UNDECIDED  # what its undecided criteria counted as


@dataclass(frozen=True)
class AnswerReport:
    answer_id: int
    query_id: int
    system_id: int
    system: str  # name and version
    system_name: str
    checklists: list[ChecklistResult]
    score: float | None  # mean over the query's checklists of the share of criteria passed
    value: float | None  # mean over the query's checklists of each one's strategy's value
    weighted: float | None
    core: float | None
    undecided: int
    split: int  # criteria whose valid votes disagreed
    adjudicated: int  # criteria decided by an adjudication
    passed: bool | None  # value against the dataset's pass threshold; None: no threshold/score
    graded: float | None  # mean 1–5 grade: over each judge's samples, then over judges
    sample: int = 0  # the answer's sample index (several answers of a system to a query)


@dataclass(frozen=True)
class SystemReport:
    system_id: int
    system: str
    answers: int
    score: float | None
    value: float | None
    weighted: float | None
    core: float | None
    graded: float | None
    passed: int
    pass_rate: float | None  # among answers with a pass/fail
    undecided: int = 0  # criteria with no valid vote, over its answers


@dataclass(frozen=True)
class ScoreReport:
    threshold: float | None
    answers: list[AnswerReport]
    systems: list[SystemReport]

    def reliability(self) -> dict:
        """pass^k, worst-of-k, spread and the mean per system (with intervals over
        queries) and, for the (system, query) pairs answered more than once, per query."""
        return _reliability(self.answers)


def _reliability(answers: Iterable[AnswerReport | AnswerTotals]) -> dict:
    """ScoreReport.reliability: evaluation.metrics.reliability on the answers' values,
    pass/fail and samples."""
    found = reliability.per_query(
        reliability.SampleScore(a.system_id, a.query_id, a.sample, a.value, a.passed)
        for a in answers
    )
    return {
        "systems": [s.as_dict() for s in reliability.per_system(found)],
        # A run of single answers has no per-query spread to show: kept for the pairs
        # with several samples only, so that the summary stays small.
        "queries": [q.as_dict() for q in found if q.k > 1],
    }


@dataclass(frozen=True)
class AnswerTotals:
    """What the systems' figures and reliability read of an answer's report (`_by_system`,
    `_reliability`): kept for every answer in one piece (TOTALS), so that a refresh after
    adjudications sums them again without reading every answer's report (`_patched`)."""

    answer_id: int
    query_id: int
    system_id: int
    system: str
    sample: int
    score: float | None
    value: float | None
    weighted: float | None
    core: float | None
    graded: float | None
    passed: bool | None
    undecided: int


_TOTAL_FIELDS = tuple(f.name for f in fields(AnswerTotals))


def _totals_row(report: AnswerReport) -> list:
    return [getattr(report, name) for name in _TOTAL_FIELDS]


# Per (answer, checklist, group) of the run: the strategies' counts over the enabled
# criteria (rubrics.GroupCounts, its fields in order, summed by rubrics_sql.group_counts
# from the one satisfied rule), the satisfied and unsatisfied core criteria, and the split
# and adjudicated criteria (all that have votes, as the page counts them). The votes are
# counted per criterion in the database and turned into the run's verdict by
# evaluation.metrics.votes_sql, the SQL form of metrics.aggregation; an adjudication
# replaces it. `sat` holds rubrics_sql.satisfied once per criterion.
_COUNTS_SQL = """
WITH iv AS (
  SELECT v.answer_id, v.criterion_id,
         sum(CASE WHEN v.outcome = 'pass' THEN 1 ELSE 0 END) AS p,
         sum(CASE WHEN v.outcome = 'fail' THEN 1 ELSE 0 END) AS f
  FROM evaluation_verdict v WHERE v.run_id = %(run)s{answers}
  GROUP BY v.answer_id, v.criterion_id
),
item AS (
  SELECT iv.answer_id, c.checklist_id, c.group_id, c.weight, c.is_core,
         c.scoring_enabled AS enabled,
         CASE WHEN iv.p > 0 AND iv.f > 0 THEN 1 ELSE 0 END AS split,
         CASE WHEN d.label IS NULL THEN 0 ELSE 1 END AS adjudicated,
         coalesce(d.label, {panel}) AS outcome
  FROM iv
  JOIN annotation_criterion c ON c.id = iv.criterion_id
  LEFT JOIN evaluation_adjudication d
    ON d.answer_id = iv.answer_id AND d.criterion_id = iv.criterion_id
),
judged AS (
  SELECT item.*, {satisfied} AS sat FROM item
)
SELECT answer_id, checklist_id, group_id, {counts}, {core}, sum(split), sum(adjudicated)
FROM judged GROUP BY answer_id, checklist_id, group_id
"""
_COUNTS = ", ".join(
    rubrics_sql.group_counts("outcome", "weight", where="enabled", is_satisfied="sat")
)
_CORE_COUNTS = rubrics_sql.group_counts(
    "outcome", "weight", where="enabled AND is_core", is_satisfied="sat"
)
# GroupCounts' satisfied, unsatisfied, undecided and undecided_penalties: the core share's
# counts under either undecided setting.
_CORE_FIELDS = (0, 1, 2, len(_CORE_COUNTS) - 1)
_CORE = ", ".join(_CORE_COUNTS[n] for n in _CORE_FIELDS)


def _counted(run: Run, answers: list[int] | None = None) -> list[tuple]:
    """(answer, checklist, group, GroupCounts fields..., core satisfied, unsatisfied,
    undecided and undecided penalties, splits, adjudicated) rows of the run, or of these
    of its answers only."""
    params: dict[str, int] = {"run": run.pk}
    only = ""
    if answers is not None:
        params |= {f"a{n}": pk for n, pk in enumerate(answers)}
        named = ", ".join(f"%(a{n})s" for n in range(len(answers)))
        only = f" AND v.answer_id IN ({named})"  # the names only; every id is a parameter
    sql = _COUNTS_SQL.format(
        panel=votes_sql.panel_outcome(run.panel_method, run.panel_threshold, "iv.p", "iv.f"),
        satisfied=rubrics_sql.satisfied("outcome", "weight"),
        counts=_COUNTS,
        core=_CORE,
        answers=only,
    )
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql" and answers is None:
            # A million votes grouped: enough memory to keep the hash off the disk.
            with transaction.atomic():
                cursor.execute("SET LOCAL work_mem = '64MB'")
                cursor.execute(sql, params)
                return cursor.fetchall()
        cursor.execute(sql, params)
        return cursor.fetchall()


def _cached_counts(run: Run) -> list[tuple]:
    """_counted(run), kept while nothing it depends on has changed: a run that has ended
    keeps its votes until it is resumed, retried or imported again (which move its status,
    attempt or finish time); adjudications and criterion weights, core and scoring flags
    move the dataset's `scores` counter, which human labels do not move: no score reads
    them (evaluation.kept.readers.SCORE_COUNTS)."""
    if not run.ended:
        return _counted(run)
    state = readers.state(run.dataset_id, readers.SCORE_COUNTS, run=run, facts=[_SHAPE])
    rows = kept_figures.kept(state)
    if rows is None:
        rows = [
            [v if v is None or isinstance(v, int) else str(v) for v in row] for row in _counted(run)
        ]
        kept_figures.store(state, rows)
    return rows


def run_report(run: Run) -> ScoreReport:
    """Every answer's and system's scores. Four queries whatever the size of the run: the
    votes are counted in the database (no vote reaches Python), and the counts of an ended
    run are kept in the figure cache until something they depend on changes. An archived
    run's are those frozen when it was archived (its verdicts are in a Parquet file)."""
    if run.archived_at is not None:
        frozen_ = _frozen_of(run)
        if frozen_ is not None:
            rows = _with_authors(frozen_["answers"])
            systems = [SystemReport(**s) for s in frozen_["systems"]]
            return ScoreReport(frozen_["threshold"], rows, systems)
    return _report(run, _cached_counts(run))


def frozen(run: Run) -> dict:
    """The run's scores as its archive keeps them (RunArchive.scores), counted now from its
    verdicts: the summary of every system and every answer's row, in this release's shape."""
    report = _report(run, _counted(run))
    return {
        "threshold": report.threshold,
        "systems": [asdict(s) for s in report.systems],
        "answers": [_answer_row(a) for a in report.answers],
        # Each system's mean with its interval over queries: the trend's whiskers.
        "reliability": report.reliability(),
        "shape": _SHAPE,
    }


def _frozen_of(run: Run) -> dict | None:
    """The scores frozen in the run's archive (None: restored meanwhile)."""
    return RunArchive.objects.filter(run_id=run.pk).values_list("scores", flat=True).first()


def _archived_scores(run: Run) -> RunScores:
    """An archived run's scores for its pages: the frozen ones, never counted (its verdicts
    are not in the table); two queries, the archive's row and the shown page's authors."""
    found = RunArchive.objects.filter(run_id=run.pk).values_list("scores", "archived_at").first()
    if found is None:  # restored between reading the run and its archive: count as usual
        return run_scores(Run.objects.select_related("dataset").get(pk=run.pk))
    cells, archived_at = found
    rows = cells["answers"]
    by_id = {row["answer_id"]: row for row in rows}
    decided_since = Adjudication.objects.filter(
        answer_id__in=list(by_id), decided_at__gt=archived_at
    )
    return RunScores(
        cells["threshold"], [SystemReport(**s) for s in cells["systems"]], len(rows),
        lambda start, stop: _with_authors(rows[start:stop]), computed_at=archived_at,
        _find=lambda ids: {pk: _answer_from(by_id[pk], {}) for pk in ids if pk in by_id},
        frozen_at=archived_at, _decided_since=decided_since.count,
    )  # fmt: skip


def _report(run: Run, counted: list, answers: list[int] | None = None) -> ScoreReport:
    """The report from the run's counts per (answer, checklist, group) (_counted), of
    these of its answers only when `answers` names them (their grades only are read)."""
    # Kept per group for the strategies; summed per (answer, checklist) for the shares,
    # their weights as exact decimals (as the database sums them) before the one division.
    sums: dict[int, dict[int, list]] = defaultdict(dict)
    by_group: dict[tuple[int, int], dict[str | None, rubrics.GroupCounts]] = defaultdict(dict)
    splits: dict[int, int] = defaultdict(int)
    decided_by_adjudication: dict[int, int] = defaultdict(int)
    for row in counted:
        answer_id, checklist_id, group_id, *counts, split, adjudicated = row
        counts, core = counts[: -len(_CORE_FIELDS)], counts[-len(_CORE_FIELDS) :]
        by_group[answer_id, checklist_id][trees.group_key(group_id)] = rubrics_sql.counts_of(counts)
        # Once per row (250,000 for a run of a million verdicts): list comprehensions over
        # indexes found once, not generators over names.
        numbers = (
            [int(counts[i] or 0) for i in _COUNT_AT]
            + [_decimal(counts[i] or 0) for i in _EXACT_AT]
            + [int(counts[_PENALTIES_AT] or 0)]
            + [int(n or 0) for n in core]
        )
        total = sums[answer_id].get(checklist_id)
        if total is None:
            sums[answer_id][checklist_id] = numbers
        else:
            for n, number in enumerate(numbers):
                total[n] += number
        splits[answer_id] += int(split)
        decided_by_adjudication[answer_id] += int(adjudicated)
    checklist_ids = {c for own in sums.values() for c in own}
    authors, scorings, undecided_as = {}, {}, {}
    found = Checklist.objects.filter(pk__in=checklist_ids)
    for pk, author, scoring, undecided in found.values_list(
        "pk", "author__username", "scoring", "undecided"
    ):
        authors[pk], scorings[pk] = author, trees.strategy_of(run.dataset, scoring)
        undecided_as[pk] = trees.undecided_of(run.dataset, undecided)

    def setting(checklist_id: int) -> str:
        return undecided_as.get(checklist_id, rubrics.DEFAULT_UNDECIDED)

    per_checklist: dict[int, dict[int, AnswerScore]] = {
        answer_id: {pk: _share_score(*numbers, setting(pk)) for pk, numbers in own.items()}
        for answer_id, own in sums.items()
    }
    grades: dict[int, dict[str, list[int | None]]] = defaultdict(lambda: defaultdict(list))
    graded_rows = GradedScore.objects.filter(run=run, outcome=GradedScore.Outcome.SCORED)
    if answers is not None:
        graded_rows = graded_rows.filter(answer_id__in=answers)
    for answer_id, judge_id, score in graded_rows.values_list("answer_id", "judge_id", "score"):
        grades[answer_id][str(judge_id)].append(score)
    checklist_trees = trees.trees_of(checklist_ids) if checklist_ids else {}
    blend = run.dataset.blend_weight

    def result(answer_id: int, checklist_id: int, score: AnswerScore) -> ChecklistResult:
        scoring = scorings.get(checklist_id, rubrics.DEFAULT_STRATEGY)
        rubric = rubrics.score_counted(
            by_group[answer_id, checklist_id],
            checklist_trees.get(checklist_id, rubrics.EMPTY_TREE),
            scoring,
            blend_weight=blend,
            undecided=setting(checklist_id),
        )
        return ChecklistResult(
            checklist_id, authors.get(checklist_id) or "", score, scoring, rubric.value,
            rubric.groups, setting(checklist_id),
        )  # fmt: skip

    threshold = run.dataset.pass_threshold
    # The answers with a vote or a grade, by id: an OR of two IN (subquery) over a million
    # verdicts is a per-row subplan in PostgreSQL, minutes at that size.
    scored = (
        Answer.objects.filter(pk__in=sorted(set(per_checklist) | set(grades)))
        .values_list("pk", "query_id", "system_id", "system__name", "system__version", "sample")
        .order_by("query_id", "system__name", "system__version", "sample", "pk")
    )
    reports = []
    for pk, query_id, system_id, name, version, sample in scored:
        checklists = [
            result(pk, checklist_id, score)
            for checklist_id, score in sorted(per_checklist.get(pk, {}).items())
        ]
        scores = [c.score for c in checklists]
        share = mean_score(scores)
        value = mean(c.value for c in checklists)
        reports.append(
            AnswerReport(
                answer_id=pk,
                query_id=query_id,
                system_id=system_id,
                system=f"{name} {version}".strip(),
                system_name=name,
                checklists=checklists,
                score=share,
                value=value,
                weighted=mean_score(scores, "weighted_share"),
                core=mean_score(scores, "core_share"),
                undecided=sum(s.undecided for s in scores),
                split=splits[pk],
                adjudicated=decided_by_adjudication[pk],
                passed=passes_threshold(value, threshold) if threshold is not None else None,
                graded=graded_mean(grades[pk]) if pk in grades else None,
                sample=sample,
            )
        )
    return ScoreReport(threshold, reports, _by_system(reports))


_AT = {f.name: n for n, f in enumerate(fields(rubrics.GroupCounts))}
# The weight sums the shares read, kept exact until the one division.
_EXACT = ("weight_satisfied", "weight_decided", "weight_undecided", "points_undecided")
_COUNT_AT = [_AT[name] for name in ("satisfied", "unsatisfied", "undecided")]
_EXACT_AT = [_AT[name] for name in _EXACT]
_PENALTIES_AT = _AT["undecided_penalties"]


def _share_score(
    satisfied: int, unsatisfied: int, undecided: int, weight_satisfied: Decimal,
    weight_decided: Decimal, weight_undecided: Decimal, points_undecided: Decimal,
    undecided_penalties: int, core_satisfied: int, core_unsatisfied: int,
    core_undecided: int, core_undecided_penalties: int, setting: str,
) -> AnswerScore:  # fmt: skip
    whole = rubrics.GroupCounts(
        satisfied, unsatisfied, undecided, float(weight_satisfied), float(weight_decided),
        weight_undecided=float(weight_undecided), points_undecided=float(points_undecided),
        undecided_penalties=undecided_penalties,
    )  # fmt: skip
    core = rubrics.GroupCounts(
        core_satisfied, core_unsatisfied, core_undecided,
        undecided_penalties=core_undecided_penalties,
    )  # fmt: skip
    return share_score(whole, core, setting)


def _decimal(value) -> Decimal:
    """A sum of weights: a Decimal from PostgreSQL, text from the kept counts, a float or
    an int from SQLite."""
    return value if isinstance(value, Decimal) else Decimal(str(value))


def _by_system(answers: list[AnswerReport] | list[AnswerTotals]) -> list[SystemReport]:
    grouped: dict[int, list[AnswerReport]] = defaultdict(list)
    for answer in answers:
        grouped[answer.system_id].append(answer)
    systems = [
        SystemReport(
            system_id=system_id,
            system=rows[0].system,
            answers=len(rows),
            score=mean(r.score for r in rows),
            value=mean(r.value for r in rows),
            weighted=mean(r.weighted for r in rows),
            core=mean(r.core for r in rows),
            graded=mean(r.graded for r in rows),
            passed=sum(r.passed is True for r in rows),
            pass_rate=pass_rate(r.passed for r in rows),
            undecided=sum(r.undecided for r in rows),
        )
        for system_id, rows in grouped.items()
    ]
    return sorted(systems, key=lambda s: s.system)


@dataclass(frozen=True)
class AnswerBrief:
    """An answer's scores without its checklists: what a reader choosing among every answer
    of a run needs."""

    answer_id: int
    query_id: int
    system_id: int
    value: float | None
    score: float | None
    undecided: int


def brief_of(report: AnswerReport) -> AnswerBrief:
    return AnswerBrief(
        report.answer_id, report.query_id, report.system_id, report.value, report.score,
        report.undecided,
    )  # fmt: skip


# The per-answer rows of an ended run are kept in pieces of this many answers, each in its
# own figure-cache row, so that a page of the run page (100) or of the API (API_PAGE_SIZE)
# reads one or two small rows instead of every answer's report.
CHUNK = 50


@dataclass
class RunScores:
    """A run's scores as the run page and the API show them: the threshold and every
    system's summary, the number of answers, and the answers read a slice at a time
    (`len()` and slicing, so that a Paginator pages it without reading every answer).
    `updating`: these are the scores kept before the latest adjudications or changes, and
    fresh ones are being computed (`computed_at` says when these were; `failure`, when the
    last try to compute them failed)."""

    threshold: float | None
    systems: list[SystemReport]
    count: int
    _read: Callable[[int, int], list[AnswerReport]]
    updating: bool = False
    computed_at: datetime | None = None
    revision: int | None = None
    failure: refresh.Failure | None = None
    # The placeholder while the run's first scores are counted in the background
    # (`_computing`): no system yet, and none of the figures above is a count.
    computing: bool = False
    _find: Callable[[list[int]], dict[int, AnswerReport]] | None = None
    _briefs: Callable[[], list[AnswerBrief] | None] | None = None
    # ScoreReport.reliability(): per system, and per query answered several times.
    reliability: dict | None = None
    # An archived run's: when its scores were frozen (they follow nothing decided since),
    # and how many adjudications of its answers were decided after that (one query, asked).
    frozen_at: datetime | None = None
    _decided_since: Callable[[], int] | None = None

    def adjudicated_since_frozen(self) -> int:
        """Adjudications of the archived run's answers decided after it was archived: its
        frozen scores do not count them (the run page says so; a restore counts them)."""
        return self._decided_since() if self._decided_since is not None else 0

    def briefs(self) -> list[AnswerBrief]:
        """Every answer's score in a few numbers, in the rows' order: for readers that pick
        among all the run's answers by score (the side-by-side page's filters and order)
        without reading every answer's report. One read of one piece when kept."""
        found = self._briefs() if self._briefs is not None else None
        if found is None:  # kept before the piece existed, or not kept: from the reports
            found = [brief_of(r) for r in self[0 : self.count]]
        return found

    def of_answers(self, answer_ids: list[int]) -> dict[int, AnswerReport]:
        """The rows of these answers, by answer id (those the run scored): the answers
        list's score column reads a page of answers from any place in the run."""
        if self._find is None:
            wanted = set(answer_ids)
            return {r.answer_id: r for r in self[0 : self.count] if r.answer_id in wanted}
        return self._find(answer_ids)

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, part: slice) -> list[AnswerReport]:
        if not isinstance(part, slice) or part.step not in (None, 1):
            raise TypeError("RunScores is read by slices of consecutive answers.")
        start, stop, _ = part.indices(self.count)
        return self._read(start, stop) if start < stop else []

    def facts(self) -> dict:
        """What the API answers carry about the state of the scores."""
        return refresh.facts(
            updating=self.updating, computed_at=self.computed_at, failure=self.failure
        )


def _scores_state(run: Run, at: Counters | None = None) -> readers.State:
    """Everything the kept report is computed from: the run's state and method (its
    verdicts and grades), the `scores` counter (adjudications, criteria, systems' names,
    answers deleted) and the dataset's pass threshold (the pass/fail column and the pass
    rates), which moves no counter."""
    dataset = run.dataset
    facts = [
        repr(dataset.pass_threshold), dataset.scoring, dataset.undecided,
        repr(dataset.blend_weight), _SHAPE,
        *readers.run_facts(run),
    ]  # fmt: skip
    return readers.state(run.dataset_id, readers.RUN_SCORES, run=run, facts=facts, at=at)


def _answer_row(report: AnswerReport) -> dict:
    """asdict(report), less the checklists' authors: they are read for the shown page
    only, since a renamed user moves no revision. Field by field: asdict's deep copy of
    every answer took a third of a refresh (0.9 s of 3 at the full preset)."""
    row = {name: getattr(report, name) for name in _ANSWER_FIELDS}
    row["checklists"] = [
        {"checklist_id": c.checklist_id,
         "score": {name: getattr(c.score, name) for name in _SCORE_FIELDS},
         "scoring": c.scoring, "value": c.value,
         "groups": [[getattr(g, name) for name in _GROUP_FIELDS] for g in c.groups],
         "undecided_as": c.undecided_as}
        for c in report.checklists
    ]  # fmt: skip
    return row


_ANSWER_FIELDS = tuple(f.name for f in fields(AnswerReport))
_SCORE_FIELDS = tuple(f.name for f in fields(AnswerScore))
_GROUP_FIELDS = tuple(f.name for f in fields(GroupScore))


def _answer_from(row: dict, authors: dict[int, str]) -> AnswerReport:
    checklists = [
        ChecklistResult(c["checklist_id"], authors.get(c["checklist_id"]) or "",
                        AnswerScore(**c["score"]), c["scoring"], c["value"],
                        tuple(GroupScore(*g) for g in c["groups"]), c["undecided_as"])
        for c in row["checklists"]
    ]  # fmt: skip
    return AnswerReport(**{**row, "checklists": checklists})


def _with_authors(rows: list[dict]) -> list[AnswerReport]:
    ids = {c["checklist_id"] for row in rows for c in row["checklists"]}
    authors = dict(
        Checklist.objects.filter(pk__in=ids).values_list("pk", "author__username")
    ) if ids else {}  # fmt: skip
    return [_answer_from(row, authors) for row in rows]


# The run's scores are refreshed by the kept-figures refresh task under this group name
# (evaluation.kept.refresh: one refresh per run in flight, back-off after failures).
REFRESH_GROUP = "scores"


def run_scores(run: Run, *, at: Counters | None = None) -> RunScores:
    """run_report(run) for a page: the same figures, but for an ended run the per-system
    summary and the ordered per-answer rows are kept in the figure cache under the state
    they were computed from (_scores_state), and a request reads the summary and the
    pieces of the shown slice only. A running run's partial scores are kept the same way,
    per window of a few seconds (readers.live_window), and refreshed like the others (at
    most every FIGURES_REFRESH_SPACING): its readers do not count its votes at each
    request while its worker writes them.

    Stale while revalidating: when what they are computed from moved (an adjudication, a
    criterion's weight, the pass threshold) and scores of an earlier state are kept, a
    request serves those, marked `updating`, and the refresh task computes the fresh ones
    in the background, once however many readers ask (evaluation.kept.refresh); a
    recount of a million votes is not paid by the reader after every adjudication. Nor
    are the first scores of a run (or of a new figure version): the reader queues them and
    gets a placeholder (`_computing`; evaluation.kept.cold), unless the settings say
    otherwise (the test suite) or the snapshot is read-only (a dataset export).

    `at`: the dataset's counters, read once by a page that shows several runs' scores
    (the answer page's ten cards), instead of once per run."""
    if run.archived_at is not None:
        return _archived_scores(run)
    state = _scores_state(run, at)
    found = _summary(state)
    if found is None and (stale := _summary(state, earlier=True)) is not None:
        if not _revalidate(run, after=stale[1], took=stale[0].get("took", 0.0)):
            # A running run's page says that its scores are partial, not "updating".
            failure = refresh.failure(run.dataset_id, run.pk, REFRESH_GROUP)
            return _kept_scores(run, state, *stale, updating=run.ended, failure=failure)
        found = _summary(state)  # kept meanwhile by an eager refresh
    if found is None:
        # Cold (first scores of the run, a new figure version, a flush): never counted in
        # the request (evaluation.kept.cold), but in a read-only snapshot.
        read_only = kept_figures.writes_refused()
        decided = cold.fill(run.dataset_id, run.pk, REFRESH_GROUP, read_only=read_only)
        if decided is cold.Cold.COMPUTE:
            keep_scores(run, state)
        found = _summary(state)
        if found is None and decided is cold.Cold.QUEUED:
            return _computing(run)
    if found is None:  # read-only (a dataset export's snapshot): nothing was kept
        return _whole(run_report(run))
    return _kept_scores(run, state, *found)


def _computing(run: Run) -> RunScores:
    """The placeholder while the run's first scores (of this figure version) are counted
    in the background: no system, no answer, `updating` with no time computed (the pages
    say "computing", the API `updating: true, computed_at: null`)."""
    failure = refresh.failure(run.dataset_id, run.pk, REFRESH_GROUP)
    return RunScores(
        run.dataset.pass_threshold, [], 0, lambda start, stop: [],
        updating=True, failure=failure, computing=True,
    )  # fmt: skip


def _whole(report: ScoreReport) -> RunScores:
    answers = report.answers
    return RunScores(
        report.threshold,
        report.systems,
        len(answers),
        lambda start, stop: answers[start:stop],
        reliability=report.reliability(),
    )


def keep_scores(run: Run, state: readers.State | None = None) -> int:
    """Count the ended run's scores afresh and keep them for its current state: what the
    first request of a run does, and the refresh task (`refresh_scores`) after a change.

    Counted afresh, not through the counts' own kept rows (run_report): the kept report
    takes their place for these pages, and keeping both would store the run twice.
    Returns the number of answers counted."""
    started = time.monotonic()
    state = state or _scores_state(run)
    report = _report(run, _counted(run))
    _keep_report(state, report, started=started, counted=len(report.answers))
    return len(report.answers)


def _keep_report(
    state: readers.State, report: ScoreReport, *, started: float, counted: int
) -> None:
    """Keep `report` for `state`: its summary and its pieces, in one transaction. `counted`:
    the answers whose votes were counted for it."""
    rows = [_answer_row(a) for a in report.answers]
    pieces = {str(n // CHUNK): rows[n : n + CHUNK] for n in range(0, len(rows), CHUNK)}
    # Where each answer's row is (its position), for readers of a few answers by id.
    pieces[INDEX] = {str(row["answer_id"]): n for n, row in enumerate(rows)}
    totals = [_totals_row(a) for a in report.answers]
    pieces |= _summed_pieces(totals)
    summary = _summary_cells(
        state, report.threshold, report.systems, report.reliability(), len(rows),
        started=started, counted=counted,
    )  # fmt: skip
    # One transaction: whoever finds the summary finds every piece, and the pieces of the
    # state before go with its summary.
    with transaction.atomic():
        kept_figures.store_pieces(state, pieces)
        kept_figures.store(state.for_part(SUMMARY), summary)


def _summed_pieces(totals: list[list]) -> dict[str, dict]:
    """The pieces kept from every answer's totals (`_totals_row`), each as columns named
    once (a reader finding other names reads the reports instead): the totals, and every
    answer's brief."""
    at = [_TOTAL_FIELDS.index(name) for name in _BRIEF_FIELDS]
    return {
        TOTALS: {"fields": list(_TOTAL_FIELDS), "rows": totals},
        BRIEFS: {"fields": list(_BRIEF_FIELDS), "rows": [[row[n] for n in at] for row in totals]},
    }


def _summary_cells(
    state: readers.State, threshold: float | None, systems: list[SystemReport],
    reliability_: dict, count: int, *, started: float, counted: int,
) -> dict:  # fmt: skip
    return {
        "threshold": threshold,
        "systems": [asdict(s) for s in systems],
        "count": count,
        "reliability": reliability_,
        "state": state.text,  # how an updating reader finds these pieces (_kept_scores)
        "shape": _SHAPE,  # whose fields the rows have: an earlier release's are not read
        # How long the count took: the next refresh after adjudications waits that much
        # longer (evaluation.kept.refresh.spacing). And how many answers it counted.
        "took": round(time.monotonic() - started, 3),
        "counted": counted,
    }


def refresh_scores(run: Run) -> int:
    """The refresh task's work: keep the run's scores for its current state, by counting
    again only the answers adjudicated since the kept ones when it can (`_patched`), else
    every answer. How many answers it counted (0: they were kept already)."""
    state = _scores_state(run)
    if _summary(state) is not None:
        return 0
    patched = _patched(run, state)
    if patched is not None:
        return patched
    return keep_scores(run, state)


# Past this share of the run's answers moved, counting them all is about as cheap.
PATCH_SHARE = 0.5


def _patched(run: Run, state: readers.State) -> int | None:
    """Bring the run's latest kept scores up to `state` when only adjudications moved them
    (evaluation.kept.score_moves): count the adjudicated answers again, put their rows in
    place of the old ones in their pieces (an answer's row keeps its position: the rows
    are ordered by query, system and sample, never by score), sum every system's figures
    and reliability from the kept totals, and move the untouched pieces to the new state
    by their keys alone. None, keeping nothing, when the kept scores were counted from
    something else than these counters say (a threshold, a method, a release's shape),
    when a move in between was not an adjudication's, when too many answers moved, or
    when a piece is missing (kept by a release without totals, or replaced meanwhile);
    else the number of answers counted."""
    started = time.monotonic()
    found = _summary(state, earlier=True)
    if found is None:
        return None
    summary = found[0]
    kept_at = _scores_counter(summary.get("state", ""), state)
    if kept_at is None:
        return None
    moved = score_moves.moved_between(run.dataset_id, kept_at, state.counters[0])
    if moved is None or len(moved) > max(CHUNK, summary["count"] * PATCH_SHARE):
        return None
    before = replace(state, counters=(kept_at,))  # the state of the kept pieces
    kept = kept_figures.kept_pieces(before, [INDEX, TOTALS])
    if len(kept) != 2 or kept[TOTALS].get("fields") != list(_TOTAL_FIELDS):
        return None
    index, totals = kept[INDEX], kept[TOTALS]["rows"]
    at = {pk: index[str(pk)] for pk in sorted(moved) if str(pk) in index}  # the run judged
    wanted = {str(n // CHUNK) for n in at.values()}
    chunks = kept_figures.kept_pieces(before, wanted)
    if len(chunks) != len(wanted):
        return None
    reports = _report(run, _counted(run, list(at)), list(at)).answers if at else []
    if len(reports) != len(at):
        return None  # an answer lost every vote: never by an adjudication
    for report in reports:
        n = at[report.answer_id]
        chunks[str(n // CHUNK)][n % CHUNK] = _answer_row(report)
        totals[n] = _totals_row(report)
    answers = [AnswerTotals(*row) for row in totals]
    cells = _summary_cells(
        state, summary["threshold"], _by_system(answers), _reliability(answers),
        summary["count"], started=started, counted=len(at),
    )  # fmt: skip
    untouched = [INDEX] + [
        str(n) for n in range(-(-summary["count"] // CHUNK)) if str(n) not in chunks
    ]
    try:
        with transaction.atomic():
            kept_figures.move_pieces(before, state, untouched, chunks | _summed_pieces(totals))
            kept_figures.store(state.for_part(SUMMARY), cells)
    except (kept_figures.PiecesGone, IntegrityError):
        return None  # another writer kept the slot between the reads and the writes
    score_moves.prune(run.dataset_id)
    logger.info(
        "Scores of run %s moved to %s by counting %d of %d answers again",
        run.pk, state.counters[0], len(at), summary["count"],
    )  # fmt: skip
    return len(at)


def _scores_counter(text: str, state: readers.State) -> int | None:
    """The `scores` counter of a kept state's text, when that state differs from `state` in
    that counter only; else None."""
    head = text.partition("|")[0]
    name, _, value = head.partition("=")
    if name != readers.RUN_SCORES.reads[0] or not value.isdigit():
        return None
    kept_at = int(value)
    return kept_at if replace(state, counters=(kept_at,)).text == text else None


def scores_kept(run: Run) -> bool:
    """The run's scores are kept for its current state: two queries, nothing counted."""
    return _summary(_scores_state(run)) is not None


def scores_served(run: Run) -> bool:
    """The run's scores are kept for its current state or an earlier one, which its readers
    serve meanwhile (the warm-up asks before queueing their refresh): two queries."""
    return _summary(_scores_state(run), earlier=True) is not None


SUMMARY = "summary"  # the part the summary of the kept scores lives in; pieces in ""
INDEX = "index"  # the piece that maps an answer's id to its row's position
BRIEFS = "briefs"  # the piece holding every answer's AnswerBrief, in the rows' order
TOTALS = "totals"  # the piece holding every answer's AnswerTotals, in the rows' order
_BRIEF_FIELDS = tuple(f.name for f in fields(AnswerBrief))


def _summary(state: readers.State, *, earlier: bool = False):
    """(summary, computed_at, revision) kept for `state`, or with `earlier` the latest
    kept for any state of the run (one indexed read of a one-row slot); None if none."""
    at = state.for_part(SUMMARY)
    rows = kept_figures.slot(at) if earlier else kept_figures.slot(at).filter(key=at.key)
    return _latest(rows)


def _latest(rows):
    """The latest kept summary of `rows` as (cells, computed_at, revision), or None."""
    found = rows.order_by("-computed_at").values_list("cells", "computed_at", "revision")
    found = found.first()
    if found is not None and found[0].get("shape") != _SHAPE:
        # Kept by a release whose rows have other fields: never served as this one's, not
        # even while a refresh runs (it would fail to read them); counted afresh instead.
        return None
    return found


def kept_undecided(run: Run) -> dict[str, int] | None:
    """Each system's undecided criteria (criteria with no valid vote, over its answers) in
    the run's latest kept scores, for pages that show a score beside the run's (analytics);
    None when none are kept yet. Never counts: a reader is not made to pay the run's count;
    after an adjudication it may show the count from before it until the refresh the run
    page queues has kept the new one."""
    # The latest summary in the run's slot, whatever its state: one query, no counters.
    at = readers.basis(run.dataset_id, readers.RUN_SCORES, run=run, part=SUMMARY)
    found = _latest(kept_figures.slot(at))
    if found is None:
        return None
    return {s["system"]: s["undecided"] for s in found[0]["systems"]}


def systems_of_runs(dataset_id: int, runs: list[Run]) -> dict[int, dict]:
    """Each run's per-system figures as last kept, without counting anything: the latest
    kept summary of each live run, the frozen scores of each archived one. Two queries for
    any number of runs, reading only the summaries' `systems` and the systems' intervals
    (a summary also holds per-query reliability rows). A run missing from the answer has
    no scores counted yet (or only in an earlier release's shape)."""
    live = [r.pk for r in runs if r.archived_at is None]
    archived = [r.pk for r in runs if r.archived_at is not None]
    keys = ("cells__shape", "cells__systems", "cells__reliability__systems")
    rows = []
    if live:
        at = readers.basis(dataset_id, readers.RUN_SCORES, part=SUMMARY)
        rows += (
            kept_figures.slots_of_runs(at, live)
            .order_by("computed_at")  # the latest of a run last: it wins below
            .values_list("run_id", *keys)
        )
    if archived:
        rows += RunArchive.objects.filter(run_id__in=archived).values_list(
            "run_id", *(key.replace("cells__", "scores__") for key in keys)
        )
    return {
        run_id: {"systems": systems, "intervals": intervals or []}
        for run_id, shape, systems, intervals in rows
        if shape == _SHAPE
    }


def kept_undecided_of(run: Run, system: str | None) -> int | None:
    """The undecided criteria behind one side of a comparison (the analytics compare page
    and API), from the run's kept scores: the system's (by name), or every system's when the
    side compares them all; None until the run's scores are counted."""
    undecided = kept_undecided(run)
    if undecided is None:
        return None
    return sum(undecided.values()) if system is None else undecided.get(system, 0)


def _revalidate(run: Run, *, after: datetime, took: float) -> bool:
    """Queue the refresh of the run's scores (once for every reader; no sooner than the
    refresh spacing after `after`, when the scores served were computed, which grows with
    `took`, how long their count took); True when the fresh ones have been kept meanwhile
    (an eager Celery runs the task inside the call)."""
    ensured = refresh.ensure(run.dataset_id, run.pk, REFRESH_GROUP, after=after, took=took)
    return ensured and refresh.eager()


def _kept_scores(
    run: Run, state: readers.State, summary: dict, computed_at: datetime, revision: int | None,
    *, updating: bool = False, failure: refresh.Failure | None = None,
) -> RunScores:  # fmt: skip
    """The scores kept under `summary`'s state (the run's current one, or an earlier one
    while `updating`), read a slice of pieces at a time."""
    text = summary["state"]

    def read(start: int, stop: int) -> list[AnswerReport]:
        first, last = start // CHUNK, (stop - 1) // CHUNK
        keys = {readers.kept_key(state.basis, text, str(n)): n for n in range(first, last + 1)}
        pieces = kept_figures.kept_by_key(run.dataset_id, keys)
        if len(pieces) != len(keys):
            # Replaced by a newer state between the two reads: read that one's slice.
            return run_scores(run)[start:stop]
        rows = [row for n in range(first, last + 1) for row in pieces[n]]
        offset = first * CHUNK
        return _with_authors(rows[start - offset : stop - offset])

    def find(answer_ids: list[int]) -> dict[int, AnswerReport]:
        """Two reads: the index's entries of these answers, then their rows in the pieces
        holding them, each picked in the database (a page asks for one answer or a few:
        decoding the whole index and pieces cost the answer page 40 of its 100 ms at ten
        runs). When a refresh replaced them between the summary's read and these (a newer
        state kept), the newer state's rows, as `read` does: answering without them made
        the side by side page show a side as not scored (bench.web, 720,000 verdicts)."""
        ids = list(dict.fromkeys(answer_ids))
        if not ids:  # nothing to pick: not even the index is read
            return {}
        at = _positions(readers.kept_key(state.basis, text, INDEX), ids)
        if at is None:
            return run_scores(run).of_answers(ids)
        numbers = {n // CHUNK for n in at.values()}
        keys = {readers.kept_key(state.basis, text, str(n)): n for n in numbers}
        places = sorted({n % CHUNK for n in at.values()})
        found = kept_figures.kept_entries(run.dataset_id, keys, places)
        if len(found) != len(keys):
            return run_scores(run).of_answers(ids)
        pieces = {keys[key]: dict(zip(places, rows, strict=True)) for key, rows in found.items()}
        rows = [pieces[n // CHUNK][n % CHUNK] for n in at.values()]
        # Without the checklists' authors (a query): the readers show the scores only.
        return {row["answer_id"]: _answer_from(row, {}) for row in rows if row is not None}

    def _positions(key: str, ids: list[int]) -> dict[int, int] | None:
        """Each answer's row position in the index kept under `key` (the run judged the
        answers missing from it); None when the index is gone. Past a piece's worth of
        answers, the index read whole is cheaper than that many picks."""
        if len(ids) > CHUNK:
            index = kept_figures.kept_by_key(run.dataset_id, {key: INDEX}).get(INDEX)
            return None if index is None else {pk: index[str(pk)] for pk in ids if str(pk) in index}
        found = kept_figures.kept_entries(run.dataset_id, [key], [str(pk) for pk in ids])
        if key not in found:
            return None
        return {pk: n for pk, n in zip(ids, found[key], strict=True) if n is not None}

    def briefs() -> list[AnswerBrief] | None:
        """One read; None when these scores were kept without the piece."""
        key = readers.kept_key(state.basis, text, BRIEFS)
        found = kept_figures.kept_by_key(run.dataset_id, {key: BRIEFS}).get(BRIEFS)
        if not isinstance(found, dict) or tuple(found.get("fields", ())) != _BRIEF_FIELDS:
            return None
        return [AnswerBrief(*row) for row in found["rows"]]

    return RunScores(
        summary["threshold"], [SystemReport(**s) for s in summary["systems"]], summary["count"],
        read, updating=updating, computed_at=computed_at, revision=revision, failure=failure,
        _find=find, _briefs=briefs, reliability=summary.get("reliability"),
    )  # fmt: skip


# The per-query reliability rows a run page shows (the API serves them all).
RELIABILITY_SHOWN = 100


def reliability_shown(report: RunScores) -> dict | None:
    """The run page's reliability tables, each row named by its system; None when no
    system answered any query more than once (pass^k would only repeat the pass rate)."""
    found = report.reliability
    if not found or not found["queries"]:
        return None
    names = {s.system_id: s.system for s in report.systems}
    named = [
        {**row, "system": names.get(row["system_id"], "")} for row in found["systems"]
    ]  # fmt: skip
    queries = [
        {**row, "system": names.get(row["system_id"], "")}
        for row in found["queries"][:RELIABILITY_SHOWN]
    ]
    return {"systems": named, "queries": queries, "more": len(found["queries"]) - len(queries)}
