"""What the run page and the run API show of a run: the verdict and graded progress, the
estimated cost, the first errors, the actions its status allows and the judges it waits
for (their circuit is open).

The counts over a run's verdicts (by outcome, tokens, requests, errors) scan all of them:
seconds at a million verdicts. A running run's are counted per live window of a few
seconds (its page polls while its worker writes). An ended run's are kept in one row
under its state (`RUN_COUNTS`), and never counted in a request (evaluation.kept.cold):
missing, the refresh task of group REFRESH_GROUP counts them while the page says
"counting" (`RunOverview.counting`), or shows the earlier state's marked updating. The
run's end and the warm-up queue that refresh before the first reader."""

from __future__ import annotations

from dataclasses import dataclass, replace

from evaluation.judges import reachability
from evaluation.judges.models import Judge
from evaluation.judges.reachability import JudgeOutage
from evaluation.kept import cold, readers
from evaluation.kept import figures as kept_figures
from evaluation.metrics.cost import CostEstimate
from evaluation.runs import grading, selectors, snapshot
from evaluation.runs.costs import run_cost_estimate, sums_of
from evaluation.runs.estimate import count_requests, requests_made
from evaluation.runs.models import Run

# The refresh group (evaluation.kept.refresh) that counts an ended run's verdicts.
REFRESH_GROUP = "overview"
# The most frequent errors the page and the API list.
ERRORS_SHOWN = 5
# What the page and API show while an ended run's counts are counted the first time.
_NOTHING_COUNTED = {
    "totals": {
        "done": 0, "passed": 0, "failed": 0, "unparseable": 0, "errors": 0, "cache_hits": 0,
        "prompt_tokens": 0, "completion_tokens": 0, "by_kind": {},
    },
    "tokens": [], "requests": 0, "errors": [],
}  # fmt: skip


@dataclass(frozen=True)
class RunOverview:
    progress: selectors.Progress
    graded: grading.GradedProgress
    cost: CostEstimate
    errors: list[selectors.ErrorGroup]  # the most frequent error messages
    actions: list[str]  # what the run's status allows: cancel, resume, retry-failed
    waiting: list[JudgeOutage]  # judges whose endpoint is down, while the run runs
    requests: int = 0  # sent to the judges so far, against run.estimate's calls
    # How an ended run's verdict counts were served (None: a running run's, counted live).
    counts: cold.Served | None = None

    @property
    def done(self) -> int:
        return self.progress.done + self.graded.done

    @property
    def expected(self) -> int:
        return self.progress.expected + self.graded.expected

    @property
    def counting(self) -> bool:
        """The ended run's verdict counts are being counted for the first time: the figures
        are zeros, and the page says so instead of showing them."""
        return self.counts is not None and self.counts.figures is None

    @property
    def updating(self) -> bool:
        """Counts of the run's earlier state are shown while fresh ones are counted."""
        return self.counts is not None and self.counts.updating

    def facts(self) -> dict:
        """What the progress API says about the counts it serves (as the scores' facts)."""
        return (self.counts or cold.Served(None, True)).facts()


def counted(run: Run) -> dict:
    """Every count over the run's verdicts that its page shows, in one row: the refresh
    task's work (keep_counts), and a reader's where the cold rule lets it count."""
    return {
        "totals": selectors.count_verdicts(run),
        "tokens": sums_of(run),
        "requests": count_requests(run),
        "errors": selectors.call_errors(run, ERRORS_SHOWN, (True, True)),
    }


def _state(run: Run) -> readers.State:
    return readers.state(run.dataset_id, readers.RUN_COUNTS, run=run)


def counts_served(run: Run) -> cold.Served:
    """An ended run's counts for a page or the API, under the cold rule. An archived run's
    are those kept when it was archived (its verdicts are in a Parquet file, and a recount
    would find none); one archived before they were kept counts the table's (none)."""
    state = _state(run)
    if run.archived_at is None:
        return cold.served(state, REFRESH_GROUP, lambda: counted(run))
    found = cold.latest(state)
    return (
        replace(found, fresh=True) if found.figures is not None else cold.Served(counted(run), True)
    )


def keep_counts(run: Run) -> dict:
    """Count the ended run's verdicts and keep them for its state, unless kept already:
    the refresh task's work (and the archive's, before the verdicts leave)."""
    return kept_figures.remembered(_state(run), lambda: counted(run))


def counts_kept(run: Run) -> bool:
    """The run's counts are kept for its current state (the warm-up asks; one query)."""
    state = _state(run)
    return kept_figures.slot(state).filter(key=state.key).exists()


def run_overview(run: Run) -> RunOverview:
    counts = counts_served(run) if run.ended else None
    found = (counts.figures or _NOTHING_COUNTED) if counts is not None else None
    progress = selectors.run_progress(run, found["totals"] if found else None)
    graded = grading.graded_progress(run)
    cost = run_cost_estimate(
        run, done=progress.done + graded.done, expected=progress.expected + graded.expected,
        sums=found["tokens"] if found else None,
    )  # fmt: skip
    has_errors = bool(progress.errors or graded.errors or progress.tasks_failed)
    errors = (
        selectors.run_errors(
            run, calls=bool(progress.errors), grades=bool(graded.errors),
            tasks=bool(progress.tasks_failed), limit=ERRORS_SHOWN,
            counted=found["errors"] if found else None,
        )
        if has_errors
        else []
    )  # fmt: skip
    actions = selectors.run_actions(run, has_errors=has_errors)
    requests = 0  # older runs have no estimate to hold it against
    if run.estimate:
        requests = found["requests"] if found else requests_made(run)
    return RunOverview(progress, graded, cost, errors, actions, waiting_for(run), requests, counts)


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
