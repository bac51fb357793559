"""Access to review items. Labels and adjudications reveal the criteria of submitted
checklists and the judges' votes, so only a dataset's reviewers and admins (review_dataset)
read or write them: 404 for non-members, 403 for members without the permission (experts,
who may still be annotating blind)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.http import Http404

from annotation import roles
from annotation.access import check_dataset
from annotation.models import Checklist, Criterion
from evaluation.answers.models import Answer

if TYPE_CHECKING:
    from annotation.access import AnyUser


def access_answer(user: AnyUser, pk: int | str) -> tuple[Answer, set[str]]:
    """The answer and the permissions held on its dataset, for reviewing."""
    try:
        answer = Answer.objects.select_related("query__dataset", "system").get(pk=pk)
    except (Answer.DoesNotExist, ValueError, TypeError):
        raise Http404("No such answer.") from None
    perms = check_dataset(user, answer.query.dataset, roles.REVIEW, hidden="No such answer.")
    return answer, perms


def reviewable_criterion(answer: Answer, pk: int | str) -> Criterion:
    """A criterion of a submitted checklist of the answer's query; anything else is a 404
    (a draft checklist is not reviewable, and an id from another query leaks nothing)."""
    try:
        return Criterion.objects.select_related("checklist").get(
            pk=pk,
            checklist__query=answer.query_id,
            checklist__status=Checklist.Status.SUBMITTED,
        )
    except (Criterion.DoesNotExist, ValueError, TypeError):
        raise Http404("No such criterion for this answer.") from None
