"""Writes. Each service changes state in one transaction and checks its own preconditions."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from django.contrib.auth.models import Group, Permission
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone
from guardian.shortcuts import assign_perm, remove_perm

from annotation import access, hooks, query_ids, roles, scoring
from annotation.models import Dataset, DomainTag, Query, query_dimensions_problem

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

logger = logging.getLogger(__name__)

# The settings a dataset admin may change, in the order the settings form and the API show
# them: the one list the form (annotation.forms.DatasetForm), the API
# (annotation.api.serializers.DatasetSerializer) and these services accept.
DATASET_SETTINGS = (
    "name",
    "description",
    "licence",
    "guideline",
    "experts_per_query",
    "show_submitted_checklists",
    "experts_create_queries",
    "formality_check",
    "pass_threshold",
    "label_policy",
    "label_share",
    "scoring",
    "undecided",
    "blend_weight",
    "dimensions",
)


def _checked_settings(fields: dict[str, object]) -> dict[str, object]:
    unknown = set(fields).difference(DATASET_SETTINGS)
    if unknown:
        raise TypeError(f"Not a dataset setting: {', '.join(sorted(unknown))}")
    return fields


@transaction.atomic
def dataset_create(*, name: str, by: AbstractBaseUser, **settings: object) -> Dataset:
    """Create a dataset; its creator becomes its admin."""
    dataset = Dataset(name=name, created_by=by, **_checked_settings(settings))
    dataset.full_clean()
    dataset.save()
    dataset_set_role(dataset=dataset, user=by, role=roles.DatasetRole.ADMIN)
    return dataset


@transaction.atomic
def dataset_update(*, dataset: Dataset, **settings: object) -> Dataset:
    """Change a dataset's settings; validated as a whole, saved together or not at all. A
    strategy that cannot score some criterion of the dataset is refused (ScoringRefused, a
    ValidationError on `scoring`) before anything changes. Checked only when the strategy
    changes from the stored one (a form may have set it on `dataset` already): a dataset
    whose criteria were scored before the check existed can still save its other
    settings."""
    _checked_settings(settings)
    if "scoring" in settings:
        stored = Dataset.objects.filter(pk=dataset.pk).values_list("scoring", flat=True).first()
        if stored != settings["scoring"]:
            scoring.validate_dataset_scoring(dataset, str(settings["scoring"]))
    for field, value in settings.items():
        setattr(dataset, field, value)
    dataset.full_clean()
    dataset.save(update_fields=[*settings])
    return dataset


@transaction.atomic
def dataset_delete(*, dataset: Dataset) -> bool:
    """Mark a dataset for deletion, which hides it from every user at once, and queue the
    task that deletes its queries, checklists, answers, runs and everything under them in
    batches (evaluation.datasets.purge, queued through annotation.hooks). A cascading delete in
    the request would take minutes on a big dataset. Marking a dataset already marked changes
    nothing and queues no second task (the workers' sweep re-queues a deletion that stalled).
    True when newly marked."""
    now = timezone.now()
    marked = Dataset.objects.filter(pk=dataset.pk, deleting_since__isnull=True).update(
        deleting_since=now, deletion_progress_at=now
    )
    dataset.refresh_from_db(fields=["deleting_since", "deletion_progress_at"])
    if marked:
        logger.info("Dataset %s (%s) marked for deletion", dataset.pk, dataset.name)
        transaction.on_commit(lambda: queue_purge(dataset.pk))
    return bool(marked)


def queue_purge(dataset_id: int) -> None:
    """Queue the deletion task (also the workers' sweep, for a deletion that stalled)."""
    try:
        hooks.queue_purge(dataset_id)
    except Exception:  # the broker is down: the mark is committed, and the sweep queues it
        logger.exception("Could not queue the deletion of dataset %s", dataset_id)


@transaction.atomic
def dataset_set_role(
    *, dataset: Dataset, user: AbstractBaseUser, role: roles.DatasetRole | None
) -> None:
    """Make `user` hold exactly `role` on `dataset` (None removes them)."""
    wanted = roles.ROLE_PERMISSIONS[role] if role else frozenset()
    for perm in roles.ALL_DATASET_PERMISSIONS - wanted:
        remove_perm(f"annotation.{perm}", user, dataset)
    for perm in wanted:
        assign_perm(f"annotation.{perm}", user, dataset)
    access.forget_checked(dataset)


@transaction.atomic
def role_groups_sync() -> None:
    """Make the site-wide groups and their model permissions match annotation.roles.

    Runs after every migrate (and after the test runner's flush), so a permission added to a
    group in code reaches existing databases without a new data migration. Permissions of an
    app not migrated yet are added by the run after that app's migration.
    """
    for name, perms in roles.GROUP_MODEL_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=name.value)
        wanted = Q()
        for app, codename in (perm.split(".") for perm in perms):
            wanted |= Q(content_type__app_label=app, codename=codename)
        group.permissions.set(Permission.objects.filter(wanted) if perms else [])


@transaction.atomic
def query_create(
    *,
    dataset: Dataset,
    text: str,
    query_date,
    category=None,
    complexity: str = "",
    tags: list[str] = (),
    reference_answer: str = "",
    dimensions: dict[str, str] | None = None,
    external_id: str = "",
    by: AbstractBaseUser | None = None,
) -> Query:
    """A new query; `dimensions` ({name: value}) among the dataset's declared ones, else
    ValidationError naming what is wrong. Its external id is the one given, else
    `query-<id>` (annotation.query_ids)."""
    _check_dimensions(dataset, dimensions)
    if external_id:
        _check_external_id(dataset, external_id)
    query = Query.objects.create(
        dataset=dataset,
        external_id=external_id,
        text=text.strip(),
        query_date=query_date,
        category=category,
        complexity=complexity,
        reference_answer=reference_answer,
        dimensions=dimensions or {},
        created_by=by,
    )
    _set_tags(query, tags)
    return query


@transaction.atomic
def query_update(*, query: Query, tags: list[str] | None = None, **fields: object) -> Query:
    """Change the given fields (text, query_date, category, complexity, status, dataset,
    dimensions, external_id); tags if given. A new external id follows
    query_set_external_id's rule; a query moves only to a dataset where no other query
    holds its external id."""
    if "dimensions" in fields:
        _check_dimensions(fields.get("dataset") or query.dataset, fields["dimensions"])
    if "external_id" in fields:
        if fields["external_id"] == query.external_id:
            del fields["external_id"]
        else:
            _check_external_id_change(query, fields["external_id"], fields.get("dataset"))
    target = fields.get("dataset")
    if target is not None and target.pk != query.dataset_id:
        wanted = fields.get("external_id", query.external_id)
        if Query.objects.filter(dataset=target, external_id=wanted).exists():
            raise ValidationError(
                {"dataset": f"Dataset “{target.name}” already has a query with external id "
                 f"“{wanted}”; change this query's external id first."}
            )  # fmt: skip
    for name, value in fields.items():
        setattr(query, name, value)
    if fields:
        query.save(update_fields=list(fields))
    if tags is not None:
        _set_tags(query, tags)
    return query


@transaction.atomic
def query_set_external_id(*, query: Query, external_id: str) -> Query:
    """Give the query another external id. Refused (ValidationError on `external_id`,
    saying why) when something outside the app may hold the present one
    (`external_id_fixed_by`), when the new one is not a valid id or another query of the
    dataset holds it. Who may ask is the caller's check (access.can_edit_query)."""
    return query_update(query=query, external_id=external_id)


def external_ids_fix(*, queries: QuerySet[Query], by: str) -> int:
    """Mark these queries' external ids as held outside the app (`by`, a key of
    annotation.query_ids.FIXED_BY), from now on; those already fixed keep their first
    reason. One UPDATE; the number of queries newly fixed."""
    if by not in query_ids.FIXED_BY:
        raise ValueError(f"Not a reason to fix an external id: {by!r}")
    return queries.filter(external_id_fixed_by="").update(
        external_id_fixed_by=by, external_id_fixed_at=timezone.now()
    )


def _check_external_id(dataset: Dataset, external_id: str, *, other_than: int | None = None):
    problem = query_ids.external_id_problem(external_id)
    if problem:
        raise ValidationError({"external_id": problem})
    holders = Query.objects.filter(dataset=dataset, external_id=external_id)
    if other_than is not None:
        holders = holders.exclude(pk=other_than)
    if holders.exists():
        raise ValidationError(
            {"external_id": f"Another query of this dataset has the external id “{external_id}”."}
        )


def _check_external_id_change(query: Query, external_id: str, dataset: Dataset | None) -> None:
    if query.external_id_fixed_by:
        raise ValidationError(
            {
                "external_id": f"The external id “{query.external_id}” can no longer change: "
                f"{query_ids.fixed_reason(query.external_id_fixed_by)} "
                f"({query.external_id_fixed_at:%Y-%m-%d}), so files, trainers or scripts "
                "outside the app may name the query by it."
            }
        )
    _check_external_id(dataset or query.dataset, external_id, other_than=query.pk)


@transaction.atomic
def query_delete(*, query: Query) -> None:
    """Delete a query with its checklists, answers and their grading."""
    query.delete()


def _check_dimensions(dataset: Dataset, dimensions: object) -> None:
    if dimensions:
        problem = query_dimensions_problem(dataset.dimensions or {}, dimensions)
        if problem:
            raise ValidationError({"dimensions": problem})


def _set_tags(query: Query, names: list[str]) -> None:
    query.tags.set([DomainTag.objects.get_or_create(name=name)[0] for name in names])


@transaction.atomic
def query_assign_experts(*, query: Query, experts: list[AbstractBaseUser]) -> None:
    """Assign exactly these experts; each must hold annotate permission on the dataset."""

    refused = [
        e.get_username()
        for e in experts
        if roles.ANNOTATE not in access.dataset_permissions(e, query.dataset)
    ]
    if refused:
        raise ValueError(f"Not experts of this dataset: {', '.join(sorted(refused))}")
    query.assigned_experts.set(experts)
