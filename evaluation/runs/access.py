"""Access to runs and verdicts. They reveal the criteria of submitted checklists and the
judges' votes, so they are for a dataset's reviewers and admins; experts (who may still be
annotating blind) and outsiders do not see them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import Http404

from annotation import roles
from annotation.access import check_dataset
from annotation.selectors import datasets_for_user
from config.site_permissions import manages_judges
from evaluation.runs.models import JudgeCall, Run, Verdict

if TYPE_CHECKING:
    from annotation.access import AnyUser


def can_see_runs(perms: set[str]) -> bool:
    return roles.CHANGE in perms or roles.REVIEW in perms


def runs_for_user(user: AnyUser) -> QuerySet[Run]:
    if not user.is_authenticated or not user.is_active:
        return Run.objects.none()
    return Run.objects.filter(
        Q(dataset__in=datasets_for_user(user, roles.CHANGE))
        | Q(dataset__in=datasets_for_user(user, roles.REVIEW))
    )


def access_run(user: AnyUser, pk: int, *, manage: bool = False) -> Run:
    """404 for non-members; 403 for members who may not see runs or, to manage, change."""
    return access_run_with_perms(user, pk, manage=manage)[0]


def access_run_with_perms(user: AnyUser, pk: int, *, manage: bool = False) -> tuple[Run, set[str]]:
    """access_run(), and the user's permissions on the run's dataset it checked (so that a
    page showing what the user may do does not ask for them again)."""
    try:
        run = Run.objects.select_related("dataset", "panel").get(pk=pk)
    except (Run.DoesNotExist, ValueError, TypeError):
        raise Http404("No such run.") from None
    perms = _runs_visible(user, run.dataset, hidden="No such run.")
    if manage and roles.CHANGE not in perms:
        raise PermissionDenied("Only the dataset's admins manage runs.")
    return run, perms


def access_verdict(user: AnyUser, pk: int) -> Verdict:
    """A verdict with its judge, answer, query, criterion and run, for those who may see its
    run; a hidden one answers exactly as a missing one."""
    verdict = (
        Verdict.objects.select_related("judge", "answer__query", "criterion", "run__dataset")
        .filter(pk=pk)
        .first()
    )
    if verdict is None:
        raise Http404("No such verdict.")
    _runs_visible(user, verdict.run.dataset, hidden="No such verdict.")
    return verdict


def _runs_visible(user: AnyUser, dataset, *, hidden: str) -> set[str]:
    """The user's permissions on the dataset, if its runs are theirs to see: 404 (saying
    `hidden`) for non-members, 403 for members who may not see runs."""
    perms = check_dataset(user, dataset, hidden=hidden)
    if not can_see_runs(perms):
        raise PermissionDenied("Runs are for the dataset's reviewers and admins.")
    return perms


# An unparseable output, or an error call's, is whatever answered at the judge's base URL,
# not a verdict: only those who manage judges read it. A parsed verdict's output is the
# judge's decision and rationale, which every reader of the run sees.
RAW_OUTPUT_HIDDEN = frozenset({"unparseable", "error"})


def raw_output_shown(user: AnyUser, outcome: str) -> bool:
    return outcome not in RAW_OUTPUT_HIDDEN or manages_judges(user)


def hide_raw_outputs(user: AnyUser, calls: Iterable[JudgeCall]) -> None:
    """Blank, on these loaded verdicts or grades (never saved), the raw outputs `user` may
    not read (raw_output_shown)."""
    for call in calls:
        if not raw_output_shown(user, call.outcome):
            call.raw_output = ""
