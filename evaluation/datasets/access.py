"""Who may import, and who may fetch an export: shared by the pages and the API."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404

from annotation import roles
from annotation.access import check_dataset, held_permissions
from annotation.models import Dataset
from evaluation.datasets.import_target import new_name
from evaluation.datasets.models import DatasetExport
from evaluation.datasets.source import Source

if TYPE_CHECKING:
    from annotation.access import AnyUser


def check_import(user: AnyUser, path: Path, dataset: Dataset | None, as_copy: str = "") -> None:
    """Importing into a dataset needs its admin role; importing as a new dataset (a copy, or
    under the name in dataset.json) needs the right to create datasets; files that bring
    judges and panels need the rights to add them (the import creates them site-wide by
    name). Raises PermissionDenied or Http404. Whether the new name is free is the
    import's own check (evaluation.datasets.import_target)."""
    with Source(path) as source:
        meta = source.dataset_json() or {}
        brings_judges = bool(source.table_file("judges") or source.table_file("panels"))
    if dataset is not None:
        check_dataset(user, dataset, roles.CHANGE)
    else:
        if not user.has_perm("annotation.add_dataset"):
            raise PermissionDenied("Only admins may create datasets.")
        holder = Dataset.objects.filter(name=new_name(meta, as_copy)).first()
        if holder is not None and holder.deleting_since and _was_admin(user, holder):
            raise PermissionDenied(
                f"A dataset named {holder.name!r} is being deleted: import again once it is "
                "gone, or import under another name."
            )
    if brings_judges and not user.has_perms(("evaluation.add_judge", "evaluation.add_panel")):
        raise PermissionDenied(
            "These files bring judges and panels: importing them needs the permissions to "
            "add judges and panels (the Admin group has them)."
        )


def _was_admin(user: AnyUser, dataset: Dataset) -> bool:
    """Whether the user administered a dataset now being deleted: only its admins learn
    that its name is about to be free."""
    return roles.CHANGE in held_permissions(user, dataset)


def access_export(user: AnyUser, token: object) -> DatasetExport:
    """The job named by the token, for a user who administers its dataset now (404 for
    anyone else, 403 for a member who is not an admin), whatever they were when it began."""
    try:
        export = DatasetExport.objects.select_related("dataset").get(token=token)
    except (DatasetExport.DoesNotExist, ValueError, TypeError, ValidationError):
        raise Http404("No such export.") from None
    check_dataset(user, export.dataset, roles.CHANGE, hidden="No such export.")
    return export
