"""Issue 28, item 3: importing as a copy under a new name, from the page, the API and the
command. A copy gets new rows everywhere and its importer as admin (the files' members only
when asked), and leaves the original as it was; a taken name is refused on its field with
nothing written; importing into a dataset is an explicit choice, and with no choice an
import never updates the dataset its files name."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from annotation import roles
from annotation.access import dataset_permissions
from annotation.models import Checklist, Citation, Criterion, Dataset, Query
from annotation.services import dataset_set_role
from bench.data_io.generate import generate
from evaluation.answers.models import Answer
from evaluation.datasets.export import export_chunks
from evaluation.datasets.import_target import NameTaken
from evaluation.datasets.importer import ImportOptions, import_dataset
from evaluation.labels.models import Adjudication, HumanLabel
from evaluation.runs.models import Run, Verdict
from tests.evaluation.data.imports import META, checklist_files, write, zipped
from tests.evaluation.data.tables import changed_tables, every_row, rewritten_tables
from tests.evaluation.data.zips import members

pytestmark = pytest.mark.django_db

# What a dataset owns, each with the lookup from its rows to the dataset.
OWNED = {
    Query: "dataset", Checklist: "query__dataset", Criterion: "checklist__query__dataset",
    Citation: "criterion__checklist__query__dataset", Answer: "query__dataset",
    Run: "dataset", Verdict: "run__dataset", HumanLabel: "answer__query__dataset",
    Adjudication: "answer__query__dataset",
}  # fmt: skip


def role(user, dataset) -> roles.DatasetRole | None:
    return roles.role_for_permissions(dataset_permissions(user, dataset))


def test_a_copy_gets_new_rows_everywhere_and_the_importer_as_its_admin(owner, tmp_path):
    original = generate("Benchmark", queries=3, systems=2, criteria=4, judges=2, samples=2)
    path = tmp_path / "benchmark.zip"
    path.write_bytes(b"".join(export_chunks(original)))
    before = every_row()

    result = import_dataset(path, ImportOptions(as_copy="Benchmark (copy)", by=owner))

    copy = result.dataset
    assert (copy.name, result.dataset_created, result.copy_of) == (
        "Benchmark (copy)",
        True,
        "Benchmark",
    )
    assert not any(result.updated.values()), result.rows
    for model, to_dataset in OWNED.items():
        theirs = set(model.objects.filter(**{to_dataset: original}).values_list("pk", flat=True))
        ours = set(model.objects.filter(**{to_dataset: copy}).values_list("pk", flat=True))
        assert len(ours) == len(theirs) > 0 and not ours & theirs, model.__name__
    assert rewritten_tables(before, every_row()) == []
    assert role(owner, copy) == roles.DatasetRole.ADMIN
    assert role(owner, original) is None  # the copy gave no right on the original
    # The file's members get no role on the copy unless asked (issue 38): the copy opens to
    # its importer alone (tests/evaluation/data/test_import_members.py asks).
    expert = original.queries.first().checklists.first().author
    assert role(expert, original) == roles.DatasetRole.EXPERT and role(expert, copy) is None
    assert result.roles_granted == 0 and result.members_not_copied > 0
    # The same dataset apart from its name and ids: its export holds the same rows.
    again, first = members(b"".join(export_chunks(copy))), members(path.read_bytes())
    for name in ("verdicts.jsonl", "labels.csv", "adjudications.jsonl", "citations.parquet"):
        assert again[name] == first[name], name


def files_of(dataset: Dataset, tmp_path: Path) -> bytes:
    """A small export-like zip whose dataset.json names `dataset`."""
    return zipped(
        write(
            tmp_path / "in", {**checklist_files(), "dataset.json": {**META, "name": dataset.name}}
        )
    )


def test_import_as_a_copy_from_the_page(client, owner, dataset, tmp_path):
    client.force_login(owner)
    form = client.get("/datasets/import/").content.decode()
    assert 'value="new"' in form and 'value="into"' in form
    response = client.post(
        "/datasets/import/",
        {"file": SimpleUploadedFile("set.zip", files_of(dataset, tmp_path)), "target": "new",
         "name": "Owner dataset (copy)", "dataset": dataset.pk, "on_guideline_errors": "warn"},
    )  # fmt: skip
    page = response.content.decode()
    assert response.status_code == 200, page
    assert "Created “Owner dataset (copy)”" in page
    assert "a copy of “Owner dataset”, every row new, with you as its admin" in page
    copy = Dataset.objects.get(name="Owner dataset (copy)")
    assert role(owner, copy) == roles.DatasetRole.ADMIN
    assert Query.objects.filter(dataset=copy, external_id="q1").exists()
    assert not Query.objects.filter(dataset=dataset).exists()  # the chosen target was the copy


def test_import_as_a_copy_through_the_api(client, owner, dataset, tmp_path):
    client.force_login(owner)
    upload = SimpleUploadedFile("set.zip", files_of(dataset, tmp_path))
    response = client.post("/api/datasets/import/", {"file": upload, "as_copy": " API copy "})
    assert response.status_code == 201, response.content
    body = response.json()
    copy = Dataset.objects.get(name="API copy")
    assert (body["dataset"], body["dataset_created"], body["copy_of"]) == (
        copy.pk,
        True,
        "Owner dataset",
    )
    assert body["created"]["queries"] == 1 and body["changed"] is True
    assert role(owner, copy) == roles.DatasetRole.ADMIN
    assert not Query.objects.filter(dataset=dataset).exists()


def test_import_as_a_copy_with_the_command(dataset, tmp_path):
    path = tmp_path / "set.zip"
    path.write_bytes(files_of(dataset, tmp_path))
    out = io.StringIO()
    call_command("import_dataset", str(path), "--as-copy", "Command copy", stdout=out)
    copy = Dataset.objects.get(name="Command copy")
    assert f"Created dataset {copy.pk} (Command copy), a copy of 'Owner dataset'," in out.getvalue()
    assert Query.objects.filter(dataset=copy).count() == 1
    with pytest.raises(CommandError, match="not allowed with argument"):
        call_command("import_dataset", str(path), "--as-copy", "X", "--dataset", str(dataset.pk))


def test_a_taken_name_is_refused_on_its_field_and_nothing_is_written(
    client, owner, dataset, tmp_path
):
    other = generate("Taken", queries=1, systems=1, criteria=2, judges=1, samples=1)
    data = files_of(dataset, tmp_path)
    path = tmp_path / "set.zip"
    path.write_bytes(data)
    client.force_login(owner)
    before = every_row()

    def upload() -> SimpleUploadedFile:
        return SimpleUploadedFile("set.zip", data)

    # The page: a typed name, or the file's name (the name field left empty).
    for name, taken in ((other.name, other.name), ("", dataset.name)):
        response = client.post(
            "/datasets/import/",
            {"file": upload(), "target": "new", "name": name, "on_guideline_errors": "warn"},
        )
        assert response.status_code == 400
        errors = response.context["form"].errors
        assert list(errors) == ["name"], errors
        assert f"A dataset named “{taken}” already exists" in errors["name"][0]
    # The API: on as_copy when given; on dataset when the name came from dataset.json.
    response = client.post("/api/datasets/import/", {"file": upload(), "as_copy": other.name})
    assert response.status_code == 400
    assert response.json() == {
        "as_copy": [
            "A dataset named 'Taken' already exists: import into it, or import a copy under "
            "another name."
        ]
    }
    response = client.post("/api/datasets/import/", {"file": upload()})
    assert response.status_code == 400
    assert response.json()["dataset"][0].startswith(
        "A dataset named 'Owner dataset' (the name in dataset.json) already exists"
    )
    both = {"file": upload(), "as_copy": "New", "dataset": dataset.pk}
    response = client.post("/api/datasets/import/", both)
    assert response.status_code == 400 and "not both" in response.json()["as_copy"][0]
    # The command.
    with pytest.raises(CommandError, match=r"'Taken' already exists.*choose another name"):
        call_command("import_dataset", str(path), "--as-copy", "Taken")
    with pytest.raises(CommandError, match="--dataset 'Owner dataset' to import into it"):
        call_command("import_dataset", str(path))
    # And the service, whatever calls it.
    with pytest.raises(NameTaken):
        import_dataset(path, ImportOptions(as_copy="Taken"))
    assert changed_tables(before, every_row()) == []


def test_importing_into_a_dataset_is_an_explicit_choice_of_its_admins(
    client, owner, collaborator, dataset, tmp_path
):
    client.force_login(owner)
    page = client.get("/datasets/import/").content.decode()
    assert 'value="new" id="id_target_1" required checked' in page  # nothing to overwrite
    page = client.get(f"/datasets/import/?dataset={dataset.pk}").content.decode()
    assert 'value="into" id="id_target_0" required checked' in page  # from its page
    assert f'<option value="{dataset.pk}" selected>' in page
    response = client.post(
        "/datasets/import/",
        {"file": SimpleUploadedFile("set.zip", files_of(dataset, tmp_path)), "target": "into",
         "on_guideline_errors": "warn"},
    )  # fmt: skip
    assert response.status_code == 400
    assert response.context["form"].errors == {"dataset": ["Choose the dataset to import into."]}
    # A dataset admin outside the Admin group may import into their dataset, nothing else.
    dataset_set_role(dataset=dataset, user=collaborator, role=roles.DatasetRole.ADMIN)
    client.force_login(collaborator)
    page = client.get("/datasets/import/").content.decode()
    assert 'value="into"' in page and 'value="new"' not in page and 'name="name"' not in page
    response = client.post(
        "/datasets/import/",
        {"file": SimpleUploadedFile("set.zip", files_of(dataset, tmp_path)), "target": "into",
         "dataset": dataset.pk, "on_guideline_errors": "warn"},
    )  # fmt: skip
    assert response.status_code == 200 and "Updated “Owner dataset”" in response.content.decode()
    assert Query.objects.filter(dataset=dataset).count() == 1
