"""Every model of the evaluation app, re-exported from the package of the concept that owns
it, so that Django finds them and callers may write `from evaluation.models import Run`.

A verdict is one judge's vote, for one sample, on one (answer, criterion) in one run. The
panel turns a criterion's votes into one verdict (evaluation.metrics.aggregation), and the
criteria verdicts into the answer's score (evaluation.metrics.scoring).

| Concept | Models |
|---|---|
| evaluation.answers.models | System, Answer |
| evaluation.datasets.models | DatasetExport |
| evaluation.judges.models | Judge, JudgeTuning, JudgeVersion, Panel, PanelMember |
| evaluation.formality.models | FormalityAdvice |
| evaluation.runs.models | Run, JudgeCall, Verdict, GradedScore, RunTask, RunItem, RunArchive |
| evaluation.labels.models | Label, HumanLabel, Adjudication, ReviewAssignment |
| evaluation.cross_evaluation.models | CrossEvaluationSettings |
| evaluation.checks.models | CriterionCheck |
| evaluation.kept.models | ReviewRevision, KeptFigure, KeptQueueRow, KeptRefresh, ScoresMove |
| evaluation.alerts.models | RegressionAlert, AlertEvent |
| evaluation.schedules.models | RunSchedule |
| evaluation.rewards.models | RewardBatch, RewardAudit, RewardVerdict |
| evaluation.pairwise.models | PairwiseSession, PairwisePair, PairwiseVote, PairwiseJudgeVote |
"""

from __future__ import annotations

from evaluation.alerts.models import AlertEvent, RegressionAlert
from evaluation.answers.models import Answer, System
from evaluation.checks.models import CriterionCheck
from evaluation.cross_evaluation.models import CrossEvaluationSettings
from evaluation.datasets.models import DatasetExport
from evaluation.formality.models import FormalityAdvice
from evaluation.judges.models import Judge, JudgeTuning, JudgeVersion, Panel, PanelMember
from evaluation.kept.models import (
    KeptFigure,
    KeptQueueRow,
    KeptRefresh,
    ReviewRevision,
    ScoresMove,
)
from evaluation.labels.models import Adjudication, HumanLabel, Label, ReviewAssignment
from evaluation.pairwise.models import (
    PairwiseJudgeVote,
    PairwisePair,
    PairwiseSession,
    PairwiseVote,
)
from evaluation.rewards.models import RewardAudit, RewardBatch, RewardVerdict
from evaluation.runs.models import (
    GradedScore,
    JudgeCall,
    Run,
    RunArchive,
    RunItem,
    RunTask,
    Verdict,
)
from evaluation.schedules.models import RunSchedule

__all__ = [
    "Adjudication", "AlertEvent", "Answer", "CriterionCheck", "CrossEvaluationSettings",
    "DatasetExport", "FormalityAdvice", "GradedScore", "HumanLabel", "Judge", "JudgeCall",
    "JudgeTuning", "JudgeVersion", "KeptFigure",
    "KeptQueueRow", "KeptRefresh", "Label", "PairwiseJudgeVote", "PairwisePair", "PairwiseSession",
    "PairwiseVote",
    "Panel", "PanelMember", "RegressionAlert",
    "ReviewAssignment", "ReviewRevision", "RewardAudit", "RewardBatch", "RewardVerdict", "Run",
    "RunArchive", "RunItem", "RunSchedule", "RunTask", "ScoresMove", "System", "Verdict",
]  # fmt: skip
