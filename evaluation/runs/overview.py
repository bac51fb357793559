"""What the run page and the run API show of a run: the verdict and graded progress, the
estimated cost, the first errors, the actions its status allows and the judges it waits
for (their circuit is open). Read from the database and Redis on every call."""

from __future__ import annotations

from dataclasses import dataclass

from evaluation.judges import reachability
from evaluation.judges.models import Judge
from evaluation.judges.reachability import JudgeOutage
from evaluation.metrics.cost import CostEstimate
from evaluation.runs import grading, selectors, snapshot
from evaluation.runs.costs import run_cost_estimate
from evaluation.runs.estimate import requests_made
from evaluation.runs.models import Run


@dataclass(frozen=True)
class RunOverview:
    progress: selectors.Progress
    graded: grading.GradedProgress
    cost: CostEstimate
    errors: list[selectors.ErrorGroup]  # the most frequent error messages
    actions: list[str]  # what the run's status allows: cancel, resume, retry-failed
    waiting: list[JudgeOutage]  # judges whose endpoint is down, while the run runs
    requests: int = 0  # sent to the judges so far, against run.estimate's calls

    @property
    def done(self) -> int:
        return self.progress.done + self.graded.done

    @property
    def expected(self) -> int:
        return self.progress.expected + self.graded.expected


def run_overview(run: Run) -> RunOverview:
    progress = selectors.run_progress(run)
    graded = grading.graded_progress(run)
    cost = run_cost_estimate(
        run, done=progress.done + graded.done, expected=progress.expected + graded.expected
    )
    has_errors = bool(progress.errors or graded.errors or progress.tasks_failed)
    errors = (
        selectors.run_errors(
            run, calls=bool(progress.errors), grades=bool(graded.errors),
            tasks=bool(progress.tasks_failed),
        )
        if has_errors
        else []
    )  # fmt: skip
    actions = selectors.run_actions(run, has_errors=has_errors)
    requests = requests_made(run) if run.estimate else 0  # older runs have no estimate
    return RunOverview(progress, graded, cost, errors, actions, waiting_for(run), requests)


def waiting_for(run: Run) -> list[JudgeOutage]:
    """The judges a running run waits for: its LLM judges whose circuit is open (read by
    judges.reachability, which sits below runs)."""
    if run.status != Run.Status.RUNNING:
        return []
    ids = [m.judge_id for m in snapshot.of(run).members if m.calls_llm]
    if not ids:
        return []
    judges = Judge.objects.filter(pk__in=ids).only("pk", "name", "kind", "base_url")
    return sorted(reachability.outages(judges).values(), key=lambda o: o.judge)
