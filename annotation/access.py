"""One access helper per guarded object. Pages, API and tasks all call these.

A user without `view_dataset` on the dataset gets 404 (the object's existence is not leaked);
a member who lacks the specific permission asked for gets 403. Checklists are blind: one
that the user may not read is a 404 too, exactly as if it did not exist.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from django.core.exceptions import PermissionDenied
from django.http import Http404
from guardian.core import ObjectPermissionChecker

from annotation import roles
from annotation.models import Checklist, Citation, Criterion, CriterionGroup, Dataset, Query

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    AnyUser = AbstractBaseUser | AnonymousUser


# Set on the user by accounts.authentication for a request made with an API token limited to
# chosen datasets: the frozenset of their ids. Absent: no limit beyond the user's own.
LIMITED_DATASETS_ATTRIBUTE = "api_token_datasets"
DATASET_LIMIT_REFUSAL = (
    "This API token is limited to other datasets: make a token for this one on your account "
    "page, or use one without a dataset limit."
)


# The (user id, permissions) check_dataset found, kept on the dataset instance it checked.
CHECKED_ATTRIBUTE = "_permissions_checked"


def token_allows(user: AnyUser, dataset_id: int) -> bool:
    """False when the request's API token is limited to datasets this one is not among."""
    limited_to = getattr(user, LIMITED_DATASETS_ATTRIBUTE, None)
    return limited_to is None or dataset_id in limited_to


def dataset_permissions(user: AnyUser, dataset: Dataset) -> set[str]:
    """The user's permissions on the dataset; none on a dataset being deleted, so every
    access helper (and so every page, API call and task that uses one) answers 404; none
    either on a dataset outside the request's token's limit."""
    if dataset.deleting_since is not None or not token_allows(user, dataset.pk):
        return set()
    checked = getattr(dataset, CHECKED_ATTRIBUTE, None)
    if checked is not None and checked[0] == getattr(user, "pk", None):
        # Found by check_dataset on this same instance, in this request: a page asking
        # again (what the user may do there) cost two more of guardian's queries.
        return set(checked[1])
    return held_permissions(user, dataset)


def held_permissions(user: AnyUser, dataset: Dataset) -> set[str]:
    """The permissions granted, whether or not the dataset is being deleted."""
    if not user.is_authenticated or not user.is_active:
        return set()
    checker = ObjectPermissionChecker(user)
    if user.is_superuser:
        return set(checker.get_perms(dataset))  # every permission of the model
    # guardian's own two queries (the user's and the user's groups' permissions), sent as
    # one UNION: every page asks this once, and a statement is a few ms of psycopg and ORM.
    # (Unordered: Permission's default ordering is not allowed in a UNION's parts on SQLite.)
    mine, groups = checker.get_user_perms(dataset), checker.get_group_perms(dataset)
    return set(mine.order_by().union(groups.order_by()))


def check_dataset(
    user: AnyUser, dataset: Dataset, perm: str = roles.VIEW, *, hidden: str = "No such dataset."
) -> set[str]:
    """Raise 404 for non-members and 403 for members without `perm`; return the perms held.
    `hidden` is the 404's message: the one a missing object of the kind asked for gets, so
    that an object in a dataset the user cannot see answers exactly as a missing one."""
    held = dataset_permissions(user, dataset)
    # Kept on this instance (the request's own) for the page itself and its navigation,
    # which would otherwise ask again (dataset_permissions); a change of role drops it
    # (forget_checked).
    setattr(dataset, CHECKED_ATTRIBUTE, (getattr(user, "pk", None), frozenset(held)))
    if roles.VIEW not in held:
        if _member_outside_token(user, dataset):
            # The member may know the dataset: say why the token is refused.
            raise PermissionDenied(DATASET_LIMIT_REFUSAL)
        raise Http404(hidden)
    if perm not in held:
        raise PermissionDenied(_needs(perm))
    return held


def forget_checked(dataset: Dataset) -> None:
    """Drop the permissions check_dataset kept on this instance: a role changed."""
    dataset.__dict__.pop(CHECKED_ATTRIBUTE, None)


def _member_outside_token(user: AnyUser, dataset: Dataset) -> bool:
    return (
        not token_allows(user, dataset.pk)
        and dataset.deleting_since is None
        and roles.VIEW in held_permissions(user, dataset)
    )


def _needs(perm: str) -> str:
    """The refusal for a member without `perm`, in words (templates/403.html shows it)."""
    allowed = [r.value for r, perms in roles.ROLE_PERMISSIONS.items() if perm in perms]
    needed = " or ".join(allowed) if allowed else "another"
    return (
        f"Your role on this dataset does not allow this: it needs the {needed} role on it. "
        "Ask one of the dataset's admins."
    )


def access_dataset(user: AnyUser, pk: int, perm: str = roles.VIEW) -> Dataset:
    try:
        dataset = Dataset.objects.get(pk=pk)
    except (Dataset.DoesNotExist, ValueError, TypeError):
        raise Http404("No such dataset.") from None
    check_dataset(user, dataset, perm)
    return dataset


def access_dataset_for_delete(user: AnyUser, pk: int) -> Dataset:
    """The dataset, if the user may delete it. A dataset already being deleted is returned
    to those who hold the delete permission, so that deleting it again is idempotent; to
    everyone else it is a 404 like any other access."""
    try:
        dataset = Dataset.objects.get(pk=pk)
    except (Dataset.DoesNotExist, ValueError, TypeError):
        raise Http404("No such dataset.") from None
    if dataset.deleting_since is None:
        check_dataset(user, dataset, roles.DELETE)
    elif roles.DELETE not in held_permissions(user, dataset):
        raise Http404("No such dataset.")
    return dataset


def access_query(user: AnyUser, pk: int, perm: str = roles.VIEW) -> Query:
    try:
        query = Query.objects.select_related("dataset", "category", "created_by").get(pk=pk)
    except (Query.DoesNotExist, ValueError, TypeError):
        raise Http404("No such query.") from None
    check_dataset(user, query.dataset, perm, hidden="No such query.")
    return query


def can_create_queries(dataset: Dataset, perms: set[str]) -> bool:
    """Dataset admins always; experts when the dataset's setting lets them."""
    if roles.CHANGE in perms:
        return True
    return roles.ANNOTATE in perms and dataset.experts_create_queries


def can_edit_query(user: AnyUser, query: Query, perms: set[str]) -> bool:
    """Dataset admins edit every query; an expert edits the queries they added, while the
    dataset lets experts create queries (other experts' checklists rest on the others)."""
    if roles.CHANGE in perms:
        return True
    return (
        can_create_queries(query.dataset, perms)
        and query.created_by_id is not None
        and query.created_by_id == user.pk
    )


def access_dataset_for_new_query(user: AnyUser, pk: int) -> Dataset:
    """The dataset, if the user may add queries to it: 404 for non-members, 403 otherwise."""
    dataset = access_dataset(user, pk)
    if not can_create_queries(dataset, dataset_permissions(user, dataset)):
        who = "admins and experts" if dataset.experts_create_queries else "admins"
        raise PermissionDenied(f"Only the dataset's {who} may add queries to this dataset.")
    return dataset


def access_query_for_edit(user: AnyUser, pk: int) -> Query:
    """The query, if the user may edit it: 404 for non-members, 403 for other members."""
    query = access_query(user, pk)
    if not can_edit_query(user, query, dataset_permissions(user, query.dataset)):
        raise PermissionDenied("Only dataset admins and the expert who added it may edit it.")
    return query


def has_submitted(user: AnyUser, query: Query) -> bool:
    return Checklist.objects.filter(
        query=query, author_id=user.pk, first_submitted_at__isnull=False
    ).exists()


def can_read_checklist(user: AnyUser, checklist: Checklist, perms: set[str]) -> bool:
    """Blind annotation, for one checklist. selectors.checklists_for_user is the same rule
    for lists; tests hold the two to the same answers."""
    if checklist.author_id == user.pk or roles.CHANGE in perms:
        return True
    if checklist.status != Checklist.Status.SUBMITTED:
        return False
    if roles.REVIEW in perms:
        return True
    dataset = checklist.query.dataset
    return dataset.show_submitted_checklists and has_submitted(user, checklist.query)


def can_start_checklist(user: AnyUser, query: Query, perms: set[str]) -> bool:
    """Experts of the dataset may annotate; once experts are assigned, only they may."""
    if roles.ANNOTATE not in perms:
        return False
    assigned = {u.pk for u in query.assigned_experts.all()}
    return not assigned or user.pk in assigned


def access_checklist(user: AnyUser, pk: int, *, edit: bool = False) -> Checklist:
    """Read access follows the blind rule; edit access is for the author alone."""
    return access_checklist_with_perms(user, pk, edit=edit)[0]


def access_checklist_with_perms(
    user: AnyUser, pk: int, *, edit: bool = False
) -> tuple[Checklist, set[str]]:
    """access_checklist, with the user's permissions on its dataset (read once)."""
    try:
        checklist = Checklist.objects.select_related(
            "query__dataset", "query__category", "author"
        ).get(pk=pk)  # what the editor shows of them too (annotation.selectors.editor_checklist)
    except (Checklist.DoesNotExist, ValueError, TypeError):
        raise Http404("No such checklist.") from None
    perms = check_dataset(user, checklist.query.dataset, hidden="No such checklist.")
    if not can_read_checklist(user, checklist, perms):
        raise Http404("No such checklist.")
    if edit and (checklist.author_id != user.pk or roles.ANNOTATE not in perms):
        raise PermissionDenied("Only the author may change a checklist.")
    return checklist, perms


def can_set_scoring(user: AnyUser, checklist: Checklist, perms: set[str]) -> bool:
    """Its author (an expert of the dataset) or a dataset admin: they decide how the
    checklist is scored (access_checklist_scoring)."""
    if roles.CHANGE in perms:
        return True
    return checklist.author_id == user.pk and roles.ANNOTATE in perms


def access_checklist_scoring(user: AnyUser, pk: int) -> Checklist:
    """A checklist whose scoring (its strategy and undecided setting) the user may change:
    its author, or an admin of its dataset (who decides how the dataset's figures are
    read). Whoever may not read it gets a 404; a reader who may not change it, a 403."""
    checklist, perms = access_checklist_with_perms(user, pk)
    if not can_set_scoring(user, checklist, perms):
        raise PermissionDenied(
            "Only the checklist's author or a dataset admin may change its scoring."
        )
    return checklist


@contextmanager
def _hidden_as(message: str) -> Iterator[None]:
    """A 404 of the object's checklist answers as a missing object of the kind asked for
    does: "No such checklist." for a hidden criterion would tell it from a missing one."""
    try:
        yield
    except Http404:
        raise Http404(message) from None


def access_criterion(user: AnyUser, pk: int, *, edit: bool = False) -> Criterion:
    try:
        checklist_id = Criterion.objects.values_list("checklist_id", flat=True).get(pk=pk)
    except (Criterion.DoesNotExist, ValueError, TypeError):
        raise Http404("No such criterion.") from None
    with _hidden_as("No such criterion."):
        checklist = access_checklist(user, checklist_id, edit=edit)
    criterion = Criterion.objects.get(pk=pk)
    criterion.checklist = checklist  # reuse the loaded checklist, query and dataset
    return criterion


def access_group(user: AnyUser, pk: int, *, edit: bool = False) -> CriterionGroup:
    """A checklist's group, by the rules of its checklist (blind reads, author-only edits)."""
    try:
        checklist_id = CriterionGroup.objects.values_list("checklist_id", flat=True).get(pk=pk)
    except (CriterionGroup.DoesNotExist, ValueError, TypeError):
        raise Http404("No such group.") from None
    with _hidden_as("No such group."):
        checklist = access_checklist(user, checklist_id, edit=edit)
    group = CriterionGroup.objects.get(pk=pk)
    group.checklist = checklist
    return group


def access_citation(user: AnyUser, pk: int, *, edit: bool = False) -> Citation:
    try:
        criterion_id = Citation.objects.values_list("criterion_id", flat=True).get(pk=pk)
    except (Citation.DoesNotExist, ValueError, TypeError):
        raise Http404("No such citation.") from None
    with _hidden_as("No such citation."):
        criterion = access_criterion(user, criterion_id, edit=edit)
    citation = Citation.objects.get(pk=pk)
    citation.criterion = criterion
    return citation
