"""Access to pairwise sessions. A session shows a dataset's queries and answers, so only the
dataset's reviewers and admins (review_dataset) open it: 404 for non-members (an id in a URL
says nothing about another dataset), 403 for members without the permission (experts, who
may still be annotating blind)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.http import Http404

from annotation import roles
from annotation.access import check_dataset
from evaluation.pairwise.models import PairwiseSession

if TYPE_CHECKING:
    from annotation.access import AnyUser


def access_session(
    user: AnyUser, pk: int | str, perm: str = roles.REVIEW
) -> tuple[PairwiseSession, set[str]]:
    """The session and the permissions held on its dataset."""
    try:
        session = PairwiseSession.objects.select_related("dataset", "system_a", "system_b").get(
            pk=pk
        )
    except (PairwiseSession.DoesNotExist, ValueError, TypeError):
        raise Http404("No such pairwise session.") from None
    perms = check_dataset(user, session.dataset, perm, hidden="No such pairwise session.")
    return session, perms
