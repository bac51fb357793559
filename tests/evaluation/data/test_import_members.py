"""Issue 38, point 6: an import grants no role silently. The files' members (members.csv)
get their roles only when asked, on the page ("Copy the members and their roles"), in the
API (`copy_members`) or with the command (`--copy-members`); every surface says how many
roles it granted, each grant is in the audit history, and the import stays all or nothing."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from accounts.services import dataset_role
from annotation import roles
from annotation.models import Dataset
from audit.models import RoleChange
from evaluation.datasets import importer
from evaluation.datasets.importer import ImportOptions, ImportRejected, import_dataset
from tests.evaluation.data.imports import META, checklist_files, write, zipped

pytestmark = pytest.mark.django_db

MEMBERS = [
    {"username": "ann", "role": "expert"},
    {"username": "rita", "role": "reviewer"},
    {"username": "owner", "role": "expert"},  # the importer: admin of the copy, left so
]


def files(tmp_path: Path) -> bytes:
    content = {**checklist_files(), "dataset.json": META, "members.jsonl": MEMBERS}
    return zipped(write(tmp_path / "in", content))


def user(username: str):
    return get_user_model().objects.filter(username=username).first()


def page_import(client, tmp_path, name: str, **extra):
    upload = SimpleUploadedFile("set.zip", files(tmp_path))
    form = {"file": upload, "target": "new", "name": name, "on_guideline_errors": "warn"}
    return client.post("/datasets/import/", {**form, **extra})


def test_the_page_grants_no_role_unless_asked(client, owner, tmp_path):
    client.force_login(owner)
    form = client.get("/datasets/import/").content.decode()
    assert 'name="copy_members"' in form and "Copy the members and their roles" in form
    assert 'name="copy_members" checked' not in form  # off by default

    response = page_import(client, tmp_path, "Plain copy")

    page = response.content.decode()
    assert response.status_code == 200, page
    copy = Dataset.objects.get(name="Plain copy")
    assert dataset_role(owner, copy) == roles.DatasetRole.ADMIN
    assert dataset_role(user("ann"), copy) is None  # the checklists' author, no role
    assert user("rita") is None  # named by members.csv alone: not even made
    assert (
        "No role granted: the files list 3 members, given no role (ticking “Copy the "
        "members and their roles” gives them theirs)." in page
    )
    assert not RoleChange.objects.filter(dataset=copy).exists()


def test_the_page_copies_the_members_when_asked(client, owner, tmp_path):
    client.force_login(owner)

    response = page_import(client, tmp_path, "Team copy", copy_members="on")

    page = response.content.decode()
    copy = Dataset.objects.get(name="Team copy")
    assert "2 roles granted to the files&#x27; members: ann (expert), rita (reviewer)." in page
    assert dataset_role(user("ann"), copy) == roles.DatasetRole.EXPERT
    assert dataset_role(user("rita"), copy) == roles.DatasetRole.REVIEWER
    assert dataset_role(owner, copy) == roles.DatasetRole.ADMIN  # never changed by a file
    assert list(
        RoleChange.objects.filter(dataset=copy)
        .order_by("pk")
        .values_list("username", "before", "after", "changed_by__username", "via")
    ) == [("ann", "", "expert", "owner", "import"), ("rita", "", "reviewer", "owner", "import")]


def test_the_api_option_and_its_counts(client, owner, tmp_path):
    client.force_login(owner)
    upload = SimpleUploadedFile("set.zip", files(tmp_path))
    response = client.post("/api/datasets/import/", {"file": upload, "as_copy": "API plain"})
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["roles_granted"], body["members_not_copied"]) == (0, 3)
    assert dataset_role(user("ann"), Dataset.objects.get(name="API plain")) is None

    upload = SimpleUploadedFile("set.zip", files(tmp_path))
    response = client.post(
        "/api/datasets/import/", {"file": upload, "as_copy": "API team", "copy_members": "true"}
    )
    body = response.json()
    assert (body["roles_granted"], body["members_not_copied"]) == (2, 0)
    assert body["created"]["members"] == 2 and body["unchanged"]["members"] == 1
    assert dataset_role(user("rita"), Dataset.objects.get(name="API team")) == (
        roles.DatasetRole.REVIEWER
    )


def test_the_command_option_and_its_output(tmp_path):
    path = tmp_path / "set.zip"
    path.write_bytes(files(tmp_path))
    out = io.StringIO()
    call_command("import_dataset", str(path), "--as-copy", "Plain", stdout=out)
    assert "No role granted: the files list 3 members, given no role (--copy-members" in (
        out.getvalue()
    )
    out = io.StringIO()
    call_command("import_dataset", str(path), "--as-copy", "Team", "--copy-members", stdout=out)
    assert (
        "3 roles granted to the files' members: ann (expert), rita (reviewer), owner (expert)."
        in out.getvalue()
    )
    change = RoleChange.objects.get(username="rita")
    assert change.changed_by is None and change.via == RoleChange.Via.IMPORT  # the command line
    # Again into the same dataset: every member has a role now.
    out = io.StringIO()
    call_command("import_dataset", str(path), "--dataset", "Team", "--copy-members", stdout=out)
    assert "No role granted: every member in the files already had a role here." in out.getvalue()


def test_roles_are_rolled_back_with_an_import_that_fails(owner, tmp_path, monkeypatch):
    path = tmp_path / "set.zip"
    path.write_bytes(files(tmp_path))

    def bad_verdict(self) -> None:  # as a verdict row refused while it is written
        raise ImportRejected(["verdicts.jsonl:1: field 'outcome': refused"])

    monkeypatch.setattr(importer._Writer, "_verdicts", bad_verdict)
    with pytest.raises(ImportRejected):
        import_dataset(path, ImportOptions(as_copy="Failed", by=owner, copy_members=True))

    assert not Dataset.objects.filter(name="Failed").exists()
    assert not RoleChange.objects.exists()
    assert user("rita") is None
