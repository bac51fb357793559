"""An admin exports the demo dataset (a zip download) and imports it back: first a copy with
one bad row, refused with an error naming the file, row and field, then the good copy, with
the counts of what was created. With UPDATE_SCREENSHOTS=1 the screenshots land in
docs/user-guide/img/."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from playwright.sync_api import expect

from annotation import roles, services
from annotation.models import Dataset
from evaluation.demo.loader import load_demo
from tests.browser.conftest import log_in
from tests.browser.test_checklist_editor import snap

pytestmark = pytest.mark.browser
COPY = "Finance demo (imported copy)"


def rewrite(source: Path, target: Path, *, name: str, bad_kind: bool) -> None:
    """The exported zip under another dataset name; with bad_kind, the third criterion's
    kind is one the workbench does not know."""
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item)
            if item.filename.endswith("/dataset.json") or item.filename == "dataset.json":
                settings = json.loads(data)
                settings["name"] = name
                data = json.dumps(settings).encode()
            elif bad_kind and item.filename.endswith("criteria.jsonl"):
                lines = data.decode().splitlines()
                row = json.loads(lines[2])
                row["kind"] = "opinion"
                lines[2] = json.dumps(row)
                data = ("\n".join(lines) + "\n").encode()
            zout.writestr(item, data)


def test_admin_exports_and_imports_a_dataset(page, owner, tmp_path):
    demo = load_demo()
    services.dataset_set_role(dataset=demo, user=owner, role=roles.DatasetRole.ADMIN)
    log_in(page, owner.username)

    # Export: dataset page → Export → a zip downloads at once (the demo is small).
    page.goto(f"/datasets/{demo.pk}/")
    page.get_by_role("link", name="Export").click()
    expect(page.get_by_role("heading", name="Export", exact=True)).to_be_visible()
    page.get_by_label("CSV").uncheck()
    page.get_by_label("Parquet").uncheck()
    snap(page, "dataset-export")
    with page.expect_download() as download_info:
        page.locator("#export-form").get_by_role("button", name="Export").click()
    download = download_info.value
    assert download.suggested_filename.endswith(".zip")
    exported = tmp_path / download.suggested_filename
    download.save_as(exported)
    with zipfile.ZipFile(exported) as archive:
        names = archive.namelist()
    assert any(n.endswith("criteria.jsonl") for n in names)
    assert any(n.endswith("README.md") for n in names)

    # Import with one bad row: refused, naming the file, the row and the field.
    bad, good = tmp_path / "finance-demo-bad.zip", tmp_path / "finance-demo.zip"
    rewrite(exported, bad, name=COPY, bad_kind=True)
    rewrite(exported, good, name=COPY, bad_kind=False)
    page.goto("/")
    page.get_by_role("link", name="Import a dataset").click()
    page.get_by_label("File").set_input_files(bad)
    page.locator("#import-form").get_by_role("button", name="Import").click()
    errors = page.locator("#import-errors")
    expect(errors).to_contain_text("Nothing was imported")
    # file:line, field and problem
    expect(errors).to_contain_text("criteria.jsonl:3: field 'kind' must be one of")
    assert not Dataset.objects.filter(name=COPY).exists()
    snap(page, "dataset-import-error")

    # The good file: a new dataset, with what was created table by table.
    page.get_by_label("File").set_input_files(good)
    page.locator("#import-form").get_by_role("button", name="Import").click()
    expect(page.get_by_role("heading", name=f"Created “{COPY}”")).to_be_visible()
    expect(page.locator("#import-counts")).to_contain_text("criteria")
    snap(page, "dataset-import-done")
    copy = Dataset.objects.get(name=COPY)
    assert copy.queries.count() == demo.queries.count()
