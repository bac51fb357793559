"""Who sees analytics: one rule for the pages and the API.

Analytics show the judges' verdicts on submitted checklists, so they are for the dataset's
reviewers and admins, like runs (evaluation.runs.access); criterion health, which
names the criteria to rewrite, is for its admins."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.exceptions import PermissionDenied

from annotation import roles
from annotation.access import access_dataset, dataset_permissions
from annotation.models import Dataset
from evaluation.runs.access import can_see_runs

if TYPE_CHECKING:
    from annotation.access import AnyUser


def access_analytics(user: AnyUser, pk: int, *, admin: bool = False) -> Dataset:
    """The dataset, for its reviewers and admins (404 for non-members, 403 for experts);
    `admin`: for its admins only (403 for reviewers)."""
    dataset = access_dataset(user, pk)
    perms = dataset_permissions(user, dataset)
    if not can_see_runs(perms):
        raise PermissionDenied("Analytics are for the dataset's reviewers and admins.")
    if admin and roles.CHANGE not in perms:
        raise PermissionDenied("Criterion health is for the dataset's admins.")
    return dataset
