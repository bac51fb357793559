"""Which dataset a dataset import writes: one the user chose to import into, or a new one.
Never one the user did not name.

- Into (`ImportOptions.dataset`): a dataset the caller checked the user administers. Rows
  are matched by their keys and only what differs is written; the name in dataset.json is
  not read.
- New (no dataset chosen): a dataset named `ImportOptions.as_copy`, or else as dataset.json
  says. Every row is new, so a file exported from a dataset of this installation makes an
  independent copy of it. A name that a dataset already holds is refused (`NameTaken`)
  before anything is written, and again under the import's lock, where the unique index on
  the name settles a race with any other writer.

Until issue 28 an import with no dataset chosen updated the dataset named in dataset.json:
an admin who meant a copy silently changed the original.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction

from annotation.models import Dataset
from evaluation.tables.rows import ImportRejected

NAME_MAX = Dataset._meta.get_field("name").max_length


class NameTaken(ImportRejected):
    """The new dataset's name is a dataset's already; nothing was written. `as_copy`: the
    name was given for the copy (else it is dataset.json's), so that each surface shows the
    refusal on the field that chose it."""

    def __init__(self, name: str, *, as_copy: bool) -> None:
        self.name = name
        self.as_copy = as_copy
        where = "" if as_copy else " (the name in dataset.json)"
        super().__init__([
            f"A dataset named {name!r}{where} already exists: import into it, or import a "
            "copy under another name."
        ])  # fmt: skip


def new_name(meta: dict, as_copy: str) -> str:
    """The name of the dataset an import creates: the copy's, else dataset.json's."""
    return (as_copy or str(meta.get("name") or "")).strip()


def name_error(name: str, *, as_copy: bool) -> str | None:
    """What is wrong with the new dataset's name as written, listed with the files' errors;
    a name that is taken raises NameTaken instead: it is no fault of the files."""
    if not name:
        return (
            "dataset.json: field 'name' is required (or choose the dataset to import into, "
            "or a name for the new dataset)"
        )
    if len(name) > NAME_MAX:
        where = "the new dataset's name" if as_copy else "dataset.json: field 'name'"
        return f"{where} is longer than {NAME_MAX} characters"
    refuse_taken(name, as_copy=as_copy)
    return None


def refuse_taken(name: str, *, as_copy: bool) -> None:
    """NameTaken when a dataset holds the name (one being deleted holds it until its last
    row is gone)."""
    if Dataset.objects.filter(name=name).exists():
        raise NameTaken(name, as_copy=as_copy)


def save_new(dataset: Dataset, *, as_copy: bool) -> None:
    """Save the new dataset, in a savepoint: another writer may have taken its name since
    the check, and the unique index then refuses it without breaking the import's
    transaction, which rolls back whole."""
    try:
        with transaction.atomic():
            dataset.save()
    except IntegrityError:
        raise NameTaken(dataset.name, as_copy=as_copy) from None
