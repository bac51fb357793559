"""Roles: site-wide groups, and the object permissions a dataset role grants.

Groups say what kind of work a person does across the site (an Admin may create datasets);
object permissions on a dataset say where they may do it. Nobody sees a dataset they were
not granted, whatever their group.
"""

from __future__ import annotations

from enum import StrEnum


class Group(StrEnum):
    EXPERT = "Expert"
    REVIEWER = "Reviewer"
    ADMIN = "Admin"


class DatasetRole(StrEnum):
    EXPERT = "expert"
    REVIEWER = "reviewer"
    ADMIN = "admin"


VIEW = "view_dataset"
ANNOTATE = "annotate_dataset"
REVIEW = "review_dataset"
CHANGE = "change_dataset"
DELETE = "delete_dataset"

ROLE_PERMISSIONS: dict[DatasetRole, frozenset[str]] = {
    DatasetRole.EXPERT: frozenset({VIEW, ANNOTATE}),
    DatasetRole.REVIEWER: frozenset({VIEW, REVIEW}),
    DatasetRole.ADMIN: frozenset({VIEW, ANNOTATE, REVIEW, CHANGE, DELETE}),
}
ALL_DATASET_PERMISSIONS = ROLE_PERMISSIONS[DatasetRole.ADMIN]


# Model-level permissions each site-wide group holds, as "app_label.codename".
GROUP_MODEL_PERMISSIONS: dict[Group, tuple[str, ...]] = {
    Group.EXPERT: (),
    Group.REVIEWER: (),
    Group.ADMIN: (
        "annotation.add_dataset",
        "annotation.add_guideline",
        "annotation.change_guideline",
        "evaluation.add_judge",
        "evaluation.change_judge",
        "evaluation.add_panel",
        "evaluation.change_panel",
        "evaluation.add_system",
        "evaluation.change_system",
    ),
}


def with_article(role: str) -> str:
    """ "an expert", "a reviewer", "an admin": a role in a sentence ("You joined it as an
    expert"), never "You are expert of"."""
    value = str(role)
    return f"{'an' if value[:1] in 'aeiou' else 'a'} {value}"


def role_for_permissions(perms: set[str]) -> DatasetRole | None:
    """The highest role whose permissions are all held; None for no membership."""
    for role in (DatasetRole.ADMIN, DatasetRole.REVIEWER, DatasetRole.EXPERT):
        if ROLE_PERMISSIONS[role] <= perms:
            return role
    return None
