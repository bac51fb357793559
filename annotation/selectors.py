"""Reads. Selectors own select_related/prefetch_related so pages stay flat as data grows."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db.models import Count, QuerySet
from guardian.shortcuts import get_objects_for_user

from annotation import roles
from annotation.models import Checklist, Dataset, Query

if TYPE_CHECKING:
    from annotation.permissions import AnyUser


def datasets_for_user(user: AnyUser, perm: str = roles.VIEW) -> QuerySet[Dataset]:
    if not user.is_authenticated or not user.is_active:
        return Dataset.objects.none()
    # accept_global_perms=False: a model-wide "view dataset" must not open every dataset;
    # superusers still see everything (guardian grants them all object permissions).
    return get_objects_for_user(
        user, f"annotation.{perm}", klass=Dataset, accept_global_perms=False
    )


def dataset_list(user: AnyUser) -> QuerySet[Dataset]:
    return datasets_for_user(user).annotate(query_count=Count("queries")).order_by("name")


def queries_for_user(user: AnyUser) -> QuerySet[Query]:
    return Query.objects.filter(dataset__in=datasets_for_user(user)).select_related("dataset")


def query_list(dataset: Dataset) -> QuerySet[Query]:
    return dataset.queries.annotate(checklist_count=Count("checklists")).order_by("id")


def checklists_visible(query: Query, user: AnyUser, perms: set[str]) -> QuerySet[Checklist]:
    """Blind annotation: experts see their own checklist; dataset admins see every one."""
    checklists = query.checklists.select_related("author").prefetch_related("criteria")
    if roles.CHANGE in perms:
        return checklists
    return checklists.filter(author_id=user.pk)
