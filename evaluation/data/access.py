"""Who may import: shared by the Import page and the API."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from django.core.exceptions import PermissionDenied

from annotation import roles
from annotation.models import Dataset
from annotation.permissions import check_dataset, dataset_permissions, held_permissions
from evaluation.data.source import Source

if TYPE_CHECKING:
    from annotation.permissions import AnyUser


def check_import(user: AnyUser, path: Path, dataset: Dataset | None) -> None:
    """Importing into a dataset needs its admin role; creating one needs the right to
    create datasets; files that bring judges and panels need the rights to add them (the
    import creates them site-wide by name). Raises PermissionDenied or Http404."""
    with Source(path) as source:
        meta = source.dataset_json() or {}
        brings_judges = bool(source.table_file("judges") or source.table_file("panels"))
    target = dataset
    if target is None and meta.get("name"):
        target = Dataset.objects.filter(name=str(meta["name"]).strip()).first()
        if target is not None and target.deleting_since and _was_admin(user, target):
            raise PermissionDenied(
                f"A dataset named {target.name!r} is being deleted: import again once it is "
                "gone, or rename the dataset in dataset.json."
            )
        if target is not None and roles.CHANGE not in _perms(user, target):
            raise PermissionDenied(
                f"A dataset named {target.name!r} exists and you are not its admin."
            )
    if target is not None:
        check_dataset(user, target, roles.CHANGE)
    elif not user.has_perm("annotation.add_dataset"):
        raise PermissionDenied("Only admins may create datasets.")
    if brings_judges and not user.has_perms(("evaluation.add_judge", "evaluation.add_panel")):
        raise PermissionDenied(
            "These files bring judges and panels: importing them needs the permissions to "
            "add judges and panels (the Admin group has them)."
        )


def _was_admin(user: AnyUser, dataset: Dataset) -> bool:
    """Whether the user administered a dataset now being deleted: only its admins learn
    that its name is about to be free."""
    return roles.CHANGE in held_permissions(user, dataset)


def _perms(user: AnyUser, dataset: Dataset) -> set[str]:

    return dataset_permissions(user, dataset)
