"""Criterion health for authors, in the checklist editor (issue 12, item 6): each of the
checklist's own criteria that the dataset's latest analysed run flags (no system passes it,
every system passes it, the judges split on it, the judges disagree with people on it).

Who sees it (docs/decisions/0005-criterion-health-in-the-editor.md): the author, once the
checklist has been submitted (the figures are judges' verdicts on the author's own
criteria, never another expert's work; after submission, so that they never steer a
first draft), and the dataset's reviewers and admins, who see runs anyway. Nobody else.
The figures are the admins' criterion-health list's own (the same counts,
`selectors.health_counts`), computed from the run's items of this checklist's query only
(a criterion's health depends on no other query's items), so they are always current and
cost milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass

from annotation.access import dataset_permissions
from annotation.models import Checklist, Criterion
from evaluation.analytics import selectors as sel
from evaluation.metrics import analytics as am
from evaluation.metrics.analytics import CriterionHealth
from evaluation.runs.access import can_see_runs
from evaluation.runs.models import Run
from evaluation.runs.selectors import choose_run, runs_of_system_answers


@dataclass(frozen=True)
class ChecklistHealth:
    run: Run
    rows: list[tuple[Criterion, CriterionHealth]]  # flagged criteria, most worrying first
    graded: int  # criteria of the checklist the run graded


def may_see(user, checklist: Checklist) -> bool:
    if checklist.author_id == user.pk:
        return checklist.first_submitted_at is not None
    # The editor's access check has kept them on this dataset instance: not asked again.
    return can_see_runs(dataset_permissions(user, checklist.query.dataset))


def checklist_health(user, checklist: Checklist) -> ChecklistHealth | None:
    """None: not for this user, or no run has graded the dataset yet."""
    if not may_see(user, checklist):
        return None
    dataset = checklist.query.dataset
    run = choose_run(dataset, None, runs_of_system_answers(dataset), or_newest=True)
    if run is None:
        return None
    criteria = {c.pk: c for c in Criterion.objects.filter(checklist=checklist)}
    # Only the query's answers: a criterion's health depends on no other query's items.
    counts = sel.health_counts(run, queries=[checklist.query_id])
    health = [h for h in am.criterion_health(counts) if h.criterion in criteria]
    return ChecklistHealth(
        run, [(criteria[h.criterion], h) for h in health if h.flags], graded=len(health)
    )
