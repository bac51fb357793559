"""Who sees two systems side by side: as their runs and answers, the dataset's reviewers and
admins; experts (who may still be annotating blind) get a 403, non-members a 404 as for a
missing dataset. One rule for the page and the API."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.exceptions import PermissionDenied
from django.http import Http404

from annotation.access import check_dataset
from annotation.models import Dataset
from evaluation.runs.access import can_see_runs

if TYPE_CHECKING:
    from annotation.access import AnyUser

REFUSED = "Side by side is for the dataset's reviewers and admins."


def access_side_by_side(user: AnyUser, pk: int) -> Dataset:
    try:
        dataset = Dataset.objects.get(pk=pk)
    except (Dataset.DoesNotExist, ValueError, TypeError):
        raise Http404("No such dataset.") from None
    # The permissions check_dataset read, not asked again.
    if not can_see_runs(check_dataset(user, dataset)):
        raise PermissionDenied(REFUSED)
    return dataset
