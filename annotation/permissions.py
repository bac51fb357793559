"""One access helper per guarded object. Pages, API and tasks all call these.

A user without `view_dataset` on the dataset gets 404 (the object's existence is not leaked);
a member who lacks the specific permission asked for gets 403.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.exceptions import PermissionDenied
from django.http import Http404
from guardian.core import ObjectPermissionChecker

from annotation import roles
from annotation.models import Dataset, Query

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    AnyUser = AbstractBaseUser | AnonymousUser


def dataset_permissions(user: AnyUser, dataset: Dataset) -> set[str]:
    if not user.is_authenticated or not user.is_active:
        return set()
    return set(ObjectPermissionChecker(user).get_perms(dataset))


def check_dataset(user: AnyUser, dataset: Dataset, perm: str = roles.VIEW) -> Dataset:
    """Raise 404 for non-members and 403 for members without `perm`; return the dataset."""
    held = dataset_permissions(user, dataset)
    if roles.VIEW not in held:
        raise Http404("No such dataset.")
    if perm not in held:
        raise PermissionDenied(f"You need the {perm!r} permission on this dataset.")
    return dataset


def access_dataset(user: AnyUser, pk: int, perm: str = roles.VIEW) -> Dataset:
    try:
        dataset = Dataset.objects.get(pk=pk)
    except (Dataset.DoesNotExist, ValueError, TypeError):
        raise Http404("No such dataset.") from None
    return check_dataset(user, dataset, perm)


def access_query(user: AnyUser, pk: int, perm: str = roles.VIEW) -> Query:
    try:
        query = Query.objects.select_related("dataset").get(pk=pk)
    except (Query.DoesNotExist, ValueError, TypeError):
        raise Http404("No such query.") from None
    check_dataset(user, query.dataset, perm)
    return query
