"""Adopting a trial ("Use this judge"): the baseline's panel takes the trial's judges for
its new runs.

Runs keep the panel they were started with (Run.snapshot), so the baseline itself and every
earlier run keep their figures; only runs started after this use the candidate.
"""

from __future__ import annotations

from django.db import transaction

from evaluation.judges import services as judges
from evaluation.judges.models import Judge, Panel
from evaluation.runs import snapshot
from evaluation.runs.models import Run


class TrialError(Exception):
    """The run cannot be adopted: not a finished trial with a baseline, or its judges gone."""


@transaction.atomic
def use_trial_judges(*, trial: Run) -> Panel:
    """Replace the members of the baseline run's panel by the trial's members as the trial
    ran them (judge, samples, temperatures); the panel's method and settings stay."""
    if trial.scope != Run.Scope.LABELLED or trial.baseline_id is None:
        raise TrialError("Only a trial run compared with a baseline can be adopted.")
    if trial.status not in Run.FINISHED:
        raise TrialError("The trial has not finished: adopt its judge once it has.")
    panel = Panel.objects.select_for_update().get(pk=trial.baseline.panel_id)
    members = snapshot.of(trial).members
    found = Judge.objects.in_bulk([m.judge_id for m in members])
    gone = [m.name for m in members if m.judge_id not in found]
    if gone or not members:
        raise TrialError(f"The trial's judges no longer exist: {', '.join(gone) or 'none'}.")
    judges.panel_save(
        panel=panel,
        members=[
            {"judge": found[m.judge_id], "samples": m.samples, "temperatures": list(m.temperatures)}
            for m in members
        ],
    )
    return panel
