"""What the run page and the run API show beside the verdict progress: the graded view's
progress and the estimated cost. Read from the database on every call, like the progress."""

from __future__ import annotations

from dataclasses import dataclass

from evaluation import grading, runs
from evaluation.costs import run_cost_estimate
from evaluation.metrics.cost import CostEstimate
from evaluation.models import Run


@dataclass(frozen=True)
class RunOverview:
    progress: runs.Progress
    graded: grading.GradedProgress
    cost: CostEstimate

    @property
    def done(self) -> int:
        return self.progress.done + self.graded.done

    @property
    def expected(self) -> int:
        return self.progress.expected + self.graded.expected


def run_overview(run: Run) -> RunOverview:
    progress = runs.run_progress(run)
    graded = grading.graded_progress(run)
    cost = run_cost_estimate(
        run, done=progress.done + graded.done, expected=progress.expected + graded.expected
    )
    return RunOverview(progress, graded, cost)
