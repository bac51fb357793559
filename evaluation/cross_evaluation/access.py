"""Who may read and write perfect answers, and who may see overlaps.

A perfect answer restates its checklist's criteria, so it follows the checklist's blind
rule exactly: whoever may read the checklist (annotation.access.can_read_checklist) may
read its perfect answer, and nobody else; an expert who has not submitted for a query never
sees another expert's perfect answer. Writing is for the checklist's author (an expert of
the dataset) and the dataset's admins. Overlap matrices show every checklist's criteria and
the judges' verdicts: like runs, they are for the dataset's reviewers and admins.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet

from annotation import roles
from annotation.access import access_checklist, dataset_permissions
from annotation.models import Checklist
from annotation.selectors import checklists_for_user
from evaluation.answers.models import Answer

if TYPE_CHECKING:
    from annotation.access import AnyUser


def can_write_perfect_answer(user: AnyUser, checklist: Checklist, perms: set[str]) -> bool:
    if roles.CHANGE in perms:
        return True
    return checklist.author_id == user.pk and roles.ANNOTATE in perms


def access_perfect_answer_checklist(user: AnyUser, pk: int, *, edit: bool = False) -> Checklist:
    """The checklist whose perfect answer is asked for: 404 where the checklist may not be
    read (blind rule), 403 to write without being its author or a dataset admin."""
    checklist = access_checklist(user, pk)
    if edit:
        perms = dataset_permissions(user, checklist.query.dataset)
        if not can_write_perfect_answer(user, checklist, perms):
            raise PermissionDenied(
                "Only the checklist's author or a dataset admin writes its perfect answer."
            )
    return checklist


def perfect_answers_for_user(user: AnyUser) -> QuerySet[Answer]:
    """Every perfect answer the user may read: those of the checklists they may read."""
    return Answer.objects.filter(
        checklist__isnull=False, checklist__in=checklists_for_user(user)
    ).select_related("checklist__author", "author", "drafted_by", "query")
