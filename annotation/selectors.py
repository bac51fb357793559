"""Reads. Selectors own select_related/prefetch_related so pages stay flat as data grows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.contrib.auth import get_user_model
from django.db.models import (
    Count,
    Exists,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    prefetch_related_objects,
)
from guardian.shortcuts import get_objects_for_user, get_users_with_perms

from annotation import roles
from annotation.access import LIMITED_DATASETS_ATTRIBUTE
from annotation.models import Checklist, Criterion, CriterionGroup, Dataset, Query

if TYPE_CHECKING:
    from annotation.access import AnyUser

SUBMITTED = Checklist.Status.SUBMITTED


def datasets_for_user(user: AnyUser, perm: str = roles.VIEW) -> QuerySet[Dataset]:
    if not user.is_authenticated or not user.is_active:
        return Dataset.objects.none()
    # accept_global_perms=False: a model-wide "view dataset" must not open every dataset;
    # superusers still see everything (guardian grants them all object permissions).
    # A dataset being deleted is gone for everyone (annotation.access).
    live = Dataset.objects.filter(deleting_since__isnull=True)
    limited_to = getattr(user, LIMITED_DATASETS_ATTRIBUTE, None)
    if limited_to is not None:  # an API token limited to chosen datasets
        live = live.filter(pk__in=limited_to)
    return get_objects_for_user(user, f"annotation.{perm}", klass=live, accept_global_perms=False)


def dataset_list(user: AnyUser) -> QuerySet[Dataset]:
    return datasets_for_user(user).annotate(query_count=Count("queries")).order_by("name")


def checklists_for_user(user: AnyUser) -> QuerySet[Checklist]:
    """Every checklist the user may read: the blind-annotation rule as one database filter.

    Own checklists; all checklists of datasets they administer; submitted checklists of
    datasets they review; and, where the dataset allows it, the submitted checklists of a
    query for which they have submitted their own.
    """
    if not user.is_authenticated or not user.is_active:
        return Checklist.objects.none()
    own_submitted = Checklist.objects.filter(
        query=OuterRef("query"), author_id=user.pk, first_submitted_at__isnull=False
    )
    return Checklist.objects.filter(query__dataset__in=datasets_for_user(user)).filter(
        Q(author_id=user.pk)
        | Q(query__dataset__in=datasets_for_user(user, roles.CHANGE))
        | Q(status=SUBMITTED, query__dataset__in=datasets_for_user(user, roles.REVIEW))
        | Q(status=SUBMITTED, query__dataset__show_submitted_checklists=True)
        & Exists(own_submitted)
    )


def queries_for_user(user: AnyUser) -> QuerySet[Query]:
    return (
        Query.objects.filter(dataset__in=datasets_for_user(user))
        .select_related("dataset", "category")
        .order_by("id")
    )


@dataclass(frozen=True)
class QueryFilters:
    search: str = ""
    category: int | None = None
    status: str = ""
    submitted: int | None = None  # exact number of submitted checklists
    assigned_to_me: bool = False


def query_list(dataset: Dataset, user: AnyUser, filters: QueryFilters) -> QuerySet[Query]:
    queries = (
        dataset.queries.select_related("category")
        .prefetch_related("tags", "assigned_experts")
        .annotate(
            checklist_count=Count("checklists", distinct=True),
            submitted_count=Count(
                "checklists", filter=Q(checklists__status=SUBMITTED), distinct=True
            ),
        )
        .order_by("id")
    )
    if filters.search:
        # Search reaches criteria text, but only of checklists this user may read (blind).
        visible_matches = checklists_for_user(user).filter(
            query=OuterRef("pk"),
            criteria__text__icontains=filters.search,
            criteria__archived_at__isnull=True,
        )
        queries = queries.filter(Q(text__icontains=filters.search) | Exists(visible_matches))
    if filters.category:
        queries = queries.filter(category_id=filters.category)
    if filters.status:
        queries = queries.filter(status=filters.status)
    if filters.submitted is not None:
        queries = queries.filter(submitted_count=filters.submitted)
    if filters.assigned_to_me:
        queries = queries.filter(assigned_experts=user.pk)
    return queries


def checklists_visible(query: Query, user: AnyUser) -> QuerySet[Checklist]:
    """The checklists of one query that the user may read, ready to render."""
    return (
        checklists_for_user(user)
        .filter(query=query)
        .select_related("author")
        .prefetch_related(
            Prefetch(
                "criteria",
                queryset=Criterion.objects.active().prefetch_related(
                    "source_types", "citations__source_type"
                ),
            )
        )
        .order_by("id")
    )


def _editor_prefetches() -> tuple[Prefetch, ...]:
    return (
        Prefetch(
            "criteria",
            queryset=Criterion.objects.active()
            .prefetch_related("source_types", "citations__source_type", "formality_advice")
            .order_by("position", "id"),
        ),
        Prefetch("groups", queryset=CriterionGroup.objects.order_by("position", "id")),
    )


def checklist_for_editor(checklist_pk: int) -> Checklist:
    return (
        Checklist.objects.select_related("query__dataset", "query__category", "author")
        .prefetch_related(*_editor_prefetches())
        .get(pk=checklist_pk)
    )


def editor_checklist(checklist: Checklist) -> Checklist:
    """The checklist a request has just loaded (with its query, dataset, category and
    author: annotation.access), given what the editor reads, as checklist_for_editor
    without loading it again."""
    prefetch_related_objects([checklist], *_editor_prefetches())
    return checklist


def dataset_experts(dataset: Dataset) -> list:
    """The dataset's experts (members whose role is expert), by username.

    Admins hold the annotate permission too, but they are not the people whose progress is
    tracked or to whom queries are assigned, so the role decides, not the permission.
    """
    # Two queries (guardian's attach_perms would run one per user): annotators minus admins.
    annotators = get_users_with_perms(
        dataset, only_with_perms_in=[roles.ANNOTATE], with_superusers=False
    )
    admins = set(
        get_users_with_perms(
            dataset, only_with_perms_in=[roles.CHANGE], with_superusers=False
        ).values_list("pk", flat=True)
    )
    experts = [user for user in annotators if user.pk not in admins]
    return sorted(experts, key=lambda u: u.get_username())


@dataclass(frozen=True)
class ExpertProgress:
    username: str
    assigned: int
    drafts: int
    submitted: int


def progress_by_expert(dataset: Dataset) -> list[ExpertProgress]:
    """Annotation progress per expert of the dataset, in two queries."""
    experts = dataset_experts(dataset)
    counts = (
        get_user_model()
        .objects.filter(pk__in=[e.pk for e in experts])
        .annotate(
            assigned=Count(
                "assigned_queries", filter=Q(assigned_queries__dataset=dataset), distinct=True
            ),
            drafts=Count(
                "checklists",
                filter=Q(checklists__query__dataset=dataset) & ~Q(checklists__status=SUBMITTED),
                distinct=True,
            ),
            submitted=Count(
                "checklists",
                filter=Q(checklists__query__dataset=dataset, checklists__status=SUBMITTED),
                distinct=True,
            ),
        )
        .order_by("username")
    )
    return [ExpertProgress(u.get_username(), u.assigned, u.drafts, u.submitted) for u in counts]
