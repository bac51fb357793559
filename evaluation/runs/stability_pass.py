"""A stability pass (docs/judging.md#stability-pass): a fixed sample of an ended run's
(answer, criterion) items graded k times by one judge of its panel, every call past the
cache, to measure how often that judge's verdict on the same item flips.

An admin of the run's dataset asks for it on the run page or through
`POST /api/runs/{id}/stability-pass/`, with the judge, k (2 to 10) and the number of items.
It is a run of its own (`Run.stability_for`: the run it measures; scope "listed": its
sample, evaluation.runs.sampling), whose panel is that one judge with k samples at the
temperature of the judge's first sample in the run. Its calls are its estimate, shown before
it starts. When it has finished, the run's judge stability figures (flip rate per criterion,
test–retest κ) are read from its verdicts (evaluation.runs.stability.measured_on): the run
page, criterion health, the agreement page and the regression rule's noise floor show them.
Like a judge canary it is not a run that systems are scored or compared on
(Run.objects.not_checks).

One pass at a time per run: a request while one is pending or running is refused
(`PassRunning`, naming it), under a lock on the run's row.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from evaluation.runs import estimate, sampling, scope, snapshot
from evaluation.runs import services as runs
from evaluation.runs.models import Run
from evaluation.runs.preflight import RunRefused

MIN_K, MAX_K = 2, 10  # calls per item (issue 43: k up to 10)
MAX_ITEMS = 5000  # items per pass: at k = 10, 50,000 calls
DEFAULT_K, DEFAULT_ITEMS = 5, 200


class PassRunning(Exception):
    """The run already has a stability pass pending or running."""

    def __init__(self, running: Run) -> None:
        super().__init__(
            f"A stability pass of this run is already {running.get_status_display().lower()}: "
            f"{running} (run {running.pk}). Wait for it to end, or cancel it."
        )
        self.running = running


@dataclass(frozen=True)
class PassRequest:
    """What an admin asks for: the judge (one of the run's panel's LLM judges), k calls
    per item and the number of items."""

    judge_id: int
    k: int
    items: int


def judges_of(run: Run) -> list[snapshot.MemberSnapshot]:
    """The judges a pass of the run may repeat: its panel's members (as it started) that
    call an LLM."""
    return [m for m in snapshot.of(run).members if m.calls_llm]


def check(run: Run, asked: PassRequest) -> snapshot.MemberSnapshot:
    """The judge's member of the run's panel, or RunRefused naming the field at fault.
    Reads nothing but the run: the items are counted when the pass is made."""
    if run.stability_for_id is not None or run.canary_for_id is not None:
        raise RunRefused(["This run checks another run: measure that run instead."], field=None)
    if run.kind == Run.Kind.IMPORTED:
        raise RunRefused(["An imported run's judges are not called here."], field=None)
    if run.status not in Run.FINISHED:
        raise RunRefused(
            ["A stability pass measures a run that has finished: wait for it to end."],
            field=None,
        )
    if not MIN_K <= asked.k <= MAX_K:
        raise RunRefused([f"k must be between {MIN_K} and {MAX_K} calls per item."], field="k")
    if not 1 <= asked.items <= MAX_ITEMS:
        raise RunRefused([f"Items must be between 1 and {MAX_ITEMS}."], field="items")
    member = next((m for m in judges_of(run) if m.judge_id == asked.judge_id), None)
    if member is None:
        names = ", ".join(m.name for m in judges_of(run)) or "none"
        raise RunRefused(
            [f"The judge must be one of this run's LLM judges ({names})."], field="judge"
        )
    return member


def pass_snapshot(run: Run, member: snapshot.MemberSnapshot, k: int) -> dict:
    """The pass's frozen panel: the one judge with k samples, every one at the temperature
    of its first sample in the run (the same judge, asked the same way k times), under the
    tuning version the run used; majority, not graded 1–5."""
    return {
        "panel": f"{member.name} ×{k} (stability pass)",
        "method": "majority",
        "threshold": run.panel_threshold,
        "graded": False,
        **({"conversation": c} if (c := run.snapshot.get("conversation")) else {}),
        "members": [
            {
                "judge": member.judge_id, "name": member.name, "kind": member.kind,
                "samples": k, "temperatures": [member.temperature(0)] * k,
                **({"prompt_version": member.prompt_version} if member.prompt_version else {}),
            }
        ],
    }  # fmt: skip


def _items(run: Run, asked: PassRequest) -> list[tuple[int, int]]:
    items = sampling.pass_sample(run, asked.judge_id, asked.items)
    if not items:
        raise RunRefused(
            ["The judge has no item of this run to grade again (no verdict on a graded "
             "criterion without a deterministic check)."],
            field="judge",
        )  # fmt: skip
    return items


def pass_estimate(run: Run, asked: PassRequest) -> estimate.Estimate:
    """What the pass would cost, before it starts: its k calls on each sampled item."""
    member = check(run, asked)
    found = pass_snapshot(run, member, asked.k)
    holder = Run(dataset_id=run.dataset_id, snapshot=found)
    return estimate.run_estimate(
        scope.Selection(dataset_id=run.dataset_id, scope=Run.Scope.LISTED),
        snapshot.of(holder),
        items=set(_items(run, asked)),
    )


def running(run: Run) -> Run | None:
    """The run's stability pass still pending or running, if any."""
    return run.stability_passes.filter(status__in=(Run.Status.PENDING, Run.Status.RUNNING)).first()


def latest(run: Run) -> Run | None:
    """The run's latest stability pass, whatever its status (the run page shows it)."""
    return run.stability_passes.order_by("-pk").first()


@transaction.atomic
def stability_pass_start(*, run: Run, asked: PassRequest, by=None) -> Run:
    """Create the pass and start it. Raises RunRefused (nothing created) or PassRunning."""
    run = Run.objects.select_for_update().get(pk=run.pk)  # one request at a time per run
    member = check(run, asked)
    busy = running(run)
    if busy is not None:
        raise PassRunning(busy)
    items = _items(run, asked)
    try:
        return runs.run_create_and_start(
            dataset=run.dataset, panel=run.panel, by=by, kind=Run.Kind.SYSTEMS,
            scope=Run.Scope.LISTED, items=items, stability_for=run,
            snapshot_of=pass_snapshot(run, member, asked.k),
            name=f"{run} \u00b7 stability pass ({member.name}, k={asked.k})",
            concurrency=run.concurrency,
        )  # fmt: skip
    except RunRefused as refused:
        # The judge's checks (its key, its endpoint): the judge is the field asked for.
        raise RunRefused(
            refused.problems, field="judge" if refused.field == "panel" else refused.field
        ) from None


def progress(found: Run) -> dict:
    """A pass's progress for the run page: verdicts written of those expected (one query)."""
    done = found.verdicts.count()
    return {
        "done": done, "expected": found.expected,
        "percent": 100.0 * done / found.expected if found.expected else 0.0,
    }  # fmt: skip
