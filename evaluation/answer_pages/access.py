"""Who sees answers: the dataset's reviewers and admins (the runs' readers). Experts, who
may still be annotating blind, get a 403; non-members a 404, as for a missing answer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.exceptions import PermissionDenied
from django.http import Http404

from annotation.access import check_dataset
from evaluation.answers.models import Answer
from evaluation.runs.access import can_see_runs

if TYPE_CHECKING:
    from annotation.access import AnyUser

REFUSED = "Answers are for the dataset's reviewers and admins."


def check_sees_answers(perms: set[str]) -> None:
    if not can_see_runs(perms):
        raise PermissionDenied(REFUSED)


def access_answer(user: AnyUser, pk: int | str) -> tuple[Answer, set[str]]:
    """The answer and the permissions held on its dataset, for reading it."""
    try:
        answer = Answer.objects.select_related("query__dataset", "system").get(pk=pk)
    except (Answer.DoesNotExist, ValueError, TypeError):
        raise Http404("No such answer.") from None
    perms = check_dataset(user, answer.query.dataset, hidden="No such answer.")
    check_sees_answers(perms)
    return answer, perms
