"""A run's scores as the app computed them before issue 14 (every vote loaded into Python), kept
unchanged as the test oracle of the SQL counting in evaluation/runs/scores.py
(tests/evaluation/runs/test_scores_sql.py).

Issue 23 added each checklist's strategy value and group scores: computed here by the
recursive oracle of tests/support/rubric_oracle.py from every criterion's verdict, never by
evaluation.metrics.rubrics' per-group counts. Penalties (negative weights) count as passed
when avoided in the shares, as the app counts them.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Q

from annotation.models import Checklist, Criterion, CriterionGroup
from evaluation.answers.models import Answer
from evaluation.labels.models import Adjudication
from evaluation.metrics.aggregation import Vote, aggregate
from evaluation.metrics.rubrics import GroupScore
from evaluation.metrics.scoring import (
    AnswerScore,
    ScoredCriterion,
    mean_score,
    passes_threshold,
    score_answer,
)
from evaluation.metrics.summary import decided_outcome, graded_mean, mean, pass_rate
from evaluation.runs.models import GradedScore, Run, Verdict
from tests.support import rubric_oracle


@dataclass(frozen=True)
class ChecklistResult:
    checklist_id: int
    author: str
    score: AnswerScore
    scoring: str = "share"
    value: float | None = None
    groups: tuple = ()
    undecided_as: str = "excluded"


@dataclass(frozen=True)
class AnswerReport:
    answer_id: int
    query_id: int
    system_id: int
    system: str  # name and version
    system_name: str
    checklists: list[ChecklistResult]
    score: float | None  # mean over the query's checklists of the share of criteria passed
    value: float | None
    weighted: float | None
    core: float | None
    undecided: int
    split: int  # criteria whose valid votes disagreed
    adjudicated: int  # criteria decided by an adjudication
    passed: bool | None  # score against the dataset's pass threshold; None: no threshold/score
    graded: float | None  # mean 1–5 grade: over each judge's samples, then over judges
    sample: int = 0  # the answer's sample index


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
    undecided: int = 0


@dataclass(frozen=True)
class ScoreReport:
    threshold: float | None
    answers: list[AnswerReport]
    systems: list[SystemReport]


def run_report(run: Run) -> ScoreReport:
    run_verdicts = Verdict.objects.filter(run=run)
    votes: dict[tuple[int, int], list[Vote]] = defaultdict(list)
    rows = run_verdicts.values_list("answer_id", "criterion_id", "judge_id", "sample", "outcome")
    for answer_id, criterion_id, judge_id, sample, outcome in rows:
        votes[answer_id, criterion_id].append(Vote(str(judge_id), sample, outcome))
    criteria = {
        c["pk"]: c
        for c in Criterion.objects.filter(pk__in=run_verdicts.values("criterion_id")).values(
            "pk",
            "checklist_id",
            "checklist__author__username",
            "weight",
            "is_core",
            "scoring_enabled",
            "group_id",
        )
    }
    adjudicated = {
        (a, c): label
        for a, c, label in Adjudication.objects.filter(
            answer_id__in=run_verdicts.values("answer_id")
        ).values_list("answer_id", "criterion_id", "label")
    }
    grades: dict[int, dict[str, list[int | None]]] = defaultdict(lambda: defaultdict(list))
    graded_rows = GradedScore.objects.filter(run=run, outcome=GradedScore.Outcome.SCORED)
    for answer_id, judge_id, score in graded_rows.values_list("answer_id", "judge_id", "score"):
        grades[answer_id][str(judge_id)].append(score)

    per_checklist: dict[int, dict[int, list[ScoredCriterion]]] = defaultdict(dict)
    leaves: dict[tuple[int, int], list] = defaultdict(list)
    splits: dict[int, int] = defaultdict(int)
    decided_by_adjudication: dict[int, int] = defaultdict(int)
    for (answer_id, criterion_id), answer_votes in votes.items():
        verdict = aggregate(answer_votes, run.panel_method, threshold=run.panel_threshold)
        splits[answer_id] += verdict.split
        label = adjudicated.get((answer_id, criterion_id))
        decided_by_adjudication[answer_id] += label is not None
        info = criteria[criterion_id]
        if info["weight"] < 0:
            _PENALTIES.add(str(criterion_id))
        per_checklist[answer_id].setdefault(info["checklist_id"], []).append(
            ScoredCriterion(
                key=str(criterion_id),
                outcome=_satisfied(decided_outcome(verdict.outcome, label), info["weight"]),
                weight=abs(info["weight"]),
                core=info["is_core"],
                enabled=info["scoring_enabled"],
            )
        )
        if info["scoring_enabled"]:
            leaves[answer_id, info["checklist_id"]].append(
                (info["group_id"], decided_outcome(verdict.outcome, label), float(info["weight"]))
            )
    authors = {c["checklist_id"]: c["checklist__author__username"] for c in criteria.values()}

    threshold = run.dataset.pass_threshold
    answers = (
        Answer.objects.filter(
            Q(pk__in=run_verdicts.values("answer_id")) | Q(pk__in=graded_rows.values("answer_id"))
        )
        .values_list("pk", "query_id", "system_id", "system__name", "system__version", "sample")
        .order_by("query_id", "system__name", "system__version", "pk")
    )
    dataset = run.dataset
    reports = []
    for pk, query_id, system_id, name, version, sample in answers:
        checklists = [
            ChecklistResult(
                checklist_id, authors[checklist_id] or "",
                _score(scored, _undecided_of(dataset, checklist_id)),
                *_rubric(dataset, checklist_id, leaves[pk, checklist_id]),
            )
            for checklist_id, scored in sorted(per_checklist.get(pk, {}).items())
        ]  # fmt: skip
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


def _undecided_of(dataset, checklist_id: int) -> str:
    own = Checklist.objects.values_list("undecided", flat=True).get(pk=checklist_id)
    return own or dataset.undecided or "excluded"


def _score(scored: list[ScoredCriterion], undecided: str) -> AnswerScore:
    """score_answer's counts, and its shares with the undecided criteria read as the
    setting says: under not_met, a positive one failed, a penalty avoided (here, where a
    penalty's outcome is already turned to satisfied or not: passed)."""
    counted = score_answer(scored)
    if undecided == "excluded":
        return counted
    read = [
        dataclasses.replace(c, outcome="pass" if c.key in _PENALTIES else "fail")
        if c.outcome == "undecided" else c
        for c in scored
    ]  # fmt: skip
    shares = score_answer(read)
    return dataclasses.replace(
        counted, share=shares.share, weighted_share=shares.weighted_share,
        core_share=shares.core_share,
    )  # fmt: skip


_PENALTIES: set[str] = set()  # keys of the penalty criteria seen (run_report fills it)


def _satisfied(outcome: str, weight) -> str:
    """A penalty passes the shares when avoided."""
    if weight >= 0 or outcome == "undecided":
        return outcome
    return "fail" if outcome == "pass" else "pass"


def _rubric(dataset, checklist_id: int, leaves: list) -> tuple[str, float | None, tuple, str]:
    """The checklist's strategy, its value and its groups' scores, by the recursive oracle."""
    own = Checklist.objects.values_list("scoring", flat=True).get(pk=checklist_id)
    strategy = own or dataset.scoring or "share"
    undecided = _undecided_of(dataset, checklist_id)
    rows = list(
        CriterionGroup.objects.filter(checklist_id=checklist_id).values_list(
            "pk", "parent_id", "weight", "title", "external_id", "position"
        )
    )
    nodes = {pk: rubric_oracle.Node(str(pk), float(weight)) for pk, _, weight, *_ in rows}
    root = rubric_oracle.Node("root", 1.0)
    for pk, parent, *_ in sorted(rows, key=lambda r: (r[5], str(r[0]))):
        (root if parent is None else nodes[parent]).children.append(nodes[pk])
    for n, (group, outcome, weight) in enumerate(leaves):
        leaf = rubric_oracle.Leaf(f"c{n}", weight, outcome)
        (root if group is None else nodes[group]).children.append(leaf)
    info = {
        str(pk): (title, external_id or f"group-{pk}") for pk, _, _, title, external_id, _ in rows
    }
    blend = dataset.blend_weight
    groups = []
    read = rubric_oracle.read_undecided(root, undecided)

    def walk(node, depth: int) -> None:
        for child in node.children:
            if isinstance(child, rubric_oracle.Node):
                decided = rubric_oracle.decided(child)
                met = sum(rubric_oracle.satisfied(x) for x in decided)
                groups.append(
                    GroupScore(
                        child.key, info[child.key][1], info[child.key][0], depth,
                        rubric_oracle.group_value(reads[child.key], strategy, blend), met,
                        len(decided) - met, len(rubric_oracle.leaves(child)) - len(decided),
                    )
                )  # fmt: skip
                walk(child, depth + 1)

    reads = {g.key: g for g in rubric_oracle.groups(read)}
    walk(root, 1)
    value = rubric_oracle.value(read, strategy, blend)
    return strategy, value, tuple(groups), undecided
