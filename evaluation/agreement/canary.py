"""The judge canary (docs/judging.md#judge-canary): did a judge change since last time?

A scheduled run whose schedule keeps a canary starts a second run beside it: the dataset's
labelled items graded again by the same panel, every call past the cache
(evaluation.schedules.services, evaluation.runs.work). When that canary run ends, each
judge's agreement with the human reference on those items (the agreement page's rules:
the adjudication, else the majority of the labels; a judge's label is the majority of its
valid samples) is measured with its Wilson interval, and compared with the previous canary
of the same dataset and panel: a judge whose agreement now is below the lower bound of its
previous interval is named as changed. The run the canary checks is then marked
"judge changed?", and its regression alert says so instead of reporting a regression of
the systems (evaluation.alerts.services).

The figures are kept in the canary run's `canary_result`, so pages read one row
(evaluation.runs.canary shows them).
"""

from __future__ import annotations

from evaluation.agreement import cells
from evaluation.agreement.selectors import Cells, FigureKey
from evaluation.metrics import intervals
from evaluation.runs.canary import measured
from evaluation.runs.models import Run


def measure(canary: Run) -> dict:
    """Each judge's and the panel's agreement with the human reference on the canary's
    items: {"judges": {name: figure}, "panel": figure}, a figure being n, agree, rate,
    low, high (Wilson 95%) and Cohen's kappa."""
    found = Cells(
        cells.cells(
            canary.dataset_id,
            canary.pk,
            method=canary.panel_method,
            threshold=canary.panel_threshold,
        )
    )
    judges = sorted(found.groups.get("judge", ()))
    return {
        "judges": {j: _figure(found, FigureKey("judge", j)) for j in judges},
        "panel": _figure(found, FigureKey("panel")),
    }


def _figure(found: Cells, key: FigureKey) -> dict:
    agreement = found.figure(key, "").agreement
    rate, low, high = intervals.wilson(agreement.agree, agreement.n)
    return {
        "n": agreement.n, "agree": agreement.agree, "rate": rate, "low": low, "high": high,
        "kappa": agreement.kappa.kappa,
    }  # fmt: skip


def changed_judges(now: dict, before: dict) -> list[str]:
    """The judges whose agreement now is below the lower bound of their previous interval.
    Pure: two `measure` results."""
    changed = []
    for name, figure in now["judges"].items():
        previous = before["judges"].get(name)
        if previous is None or previous["low"] is None or figure["rate"] is None:
            continue
        if figure["rate"] < previous["low"]:
            changed.append(name)
    return changed


def previous_canary(canary: Run) -> Run | None:
    """The dataset's latest canary of the same panel that ended, with figures, before it."""
    earlier = measured(canary.dataset_id, canary.panel_id).filter(pk__lt=canary.pk)
    return earlier.filter(status__in=Run.FINISHED).first()


def record(canary: Run) -> dict:
    """Measure the canary, compare it with the previous one, keep and return the result:
    the figures, the previous canary's id and figures' judges, and the judges changed."""
    now = measure(canary)
    previous = previous_canary(canary)
    before = previous.canary_result if previous is not None else None
    result = {
        **now,
        "previous": None if previous is None else previous.pk,
        "previous_judges": None if before is None else before["judges"],
        "changed": [] if before is None else changed_judges(now, before),
    }
    Run.objects.filter(pk=canary.pk).update(canary_result=result)
    canary.canary_result = result
    return result
