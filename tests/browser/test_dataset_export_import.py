"""An admin exports the demo dataset (a zip download, after a run, with labels) and imports
it back, as issue 28 asks a new team to: into the dataset it came from, which changes
nothing and says so; then as a copy under a new name, chosen on the page (first a file with
one bad row, refused with an error naming the file, row and field, then the good file),
which creates the copy with its counts, the admin as its admin. axe-core finds no serious
violation on the Import page, its errors or its result. With UPDATE_SCREENSHOTS=1 the
screenshots land in docs/user-guide/img/."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from playwright.sync_api import expect

from annotation import roles, services
from annotation.access import dataset_permissions
from annotation.models import Checklist, Dataset
from evaluation.answers.models import Answer
from evaluation.demo.loader import load_demo
from evaluation.labels.models import HumanLabel
from evaluation.runs.models import Run
from tests.browser.conftest import log_in
from tests.browser.test_accessibility import serious_violations
from tests.browser.test_checklist_editor import snap
from tests.evaluation.data.tables import changed_tables, every_row
from tests.factories import PanelFactory, external_judges
from tests.support.builders import finished_run

pytestmark = pytest.mark.browser
COPY = "Finance demo (imported copy)"


def with_bad_kind(source: Path, target: Path) -> None:
    """The exported zip with its third criterion of a kind the workbench does not know."""
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item)
            if item.filename.endswith("criteria.jsonl"):
                lines = data.decode().splitlines()
                row = json.loads(lines[2])
                row["kind"] = "opinion"
                lines[2] = json.dumps(row)
                data = ("\n".join(lines) + "\n").encode()
            zout.writestr(item, data)


def demo_with_a_run() -> Dataset:
    """The demo dataset with a finished run of two judges on its first answers, and a
    reviewer's labels."""
    demo = load_demo()
    answers = Answer.objects.filter(query__dataset=demo, checklist__isnull=True).order_by("pk")
    votes = {}
    for answer in answers[:3]:
        for checklist in answer.query.checklists.filter(status=Checklist.Status.SUBMITTED):
            for n, criterion in enumerate(checklist.criteria.order_by("position")):
                votes[answer, criterion] = ("pass", "fail" if n % 2 else "pass")
    finished_run(demo, PanelFactory(judges=external_judges(2)), votes)
    for answer, criterion in list(votes)[:3]:
        HumanLabel.objects.create(answer=answer, criterion=criterion, rater="rita", label="pass")
    return demo


def no_tables_but_sessions_changed(before: dict) -> list[str]:
    after = every_row()
    return [t for t in changed_tables(before, after) if not t.startswith("django_session")]


def test_an_export_imported_back_changes_nothing_and_one_imported_as_a_copy_is_new(
    page, owner, tmp_path
):
    demo = demo_with_a_run()
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
    assert any(n.endswith("verdicts.jsonl") for n in names)
    assert any(n.endswith("README.md") for n in names)

    # Back into the dataset it came from: the dataset page's Import starts on that choice.
    before = every_row()
    page.goto(f"/datasets/{demo.pk}/")
    page.get_by_role("link", name="Import", exact=True).click()
    expect(page.get_by_label("Import into an existing dataset")).to_be_checked()
    expect(page.get_by_label("Dataset to import into")).to_have_value(str(demo.pk))
    assert serious_violations(page) == []
    page.get_by_label("File").set_input_files(exported)
    page.locator("#import-form").get_by_role("button", name="Import").click()
    expect(page.get_by_role("heading", name="Nothing changed in “Finance demo”")).to_be_visible()
    expect(page.locator("#import-summary")).to_contain_text(
        "Nothing changed: everything was already there."
    )
    counts = page.locator("#import-counts tbody tr")
    expect(counts.filter(has_text="verdicts")).to_have_count(1)
    for row in counts.all():  # every table: 0 new, 0 changed
        cells = row.locator("td")
        assert (cells.nth(1).inner_text(), cells.nth(2).inner_text()) == ("0", "0")
    assert serious_violations(page) == []
    snap(page, "dataset-import-unchanged")
    assert no_tables_but_sessions_changed(before) == []

    # As a copy, from the dataset list: the page starts on a new dataset. A bad row first.
    bad = tmp_path / "finance-demo-bad.zip"
    with_bad_kind(exported, bad)
    page.goto("/")
    page.get_by_role("link", name="Import a dataset").click()
    expect(page.get_by_label("Import as a new dataset")).to_be_checked()
    page.get_by_label("New dataset's name").fill(COPY)
    page.get_by_label("File").set_input_files(bad)
    page.locator("#import-form").get_by_role("button", name="Import").click()
    errors = page.locator("#import-errors")
    expect(errors).to_contain_text("Nothing was imported")
    # file:line, field and problem
    expect(errors).to_contain_text("criteria.jsonl:3: field 'kind' must be one of")
    assert not Dataset.objects.filter(name=COPY).exists()
    assert serious_violations(page) == []
    snap(page, "dataset-import-error")

    # A name that is taken is refused on its field, nothing written.
    page.get_by_label("New dataset's name").fill("Finance demo")
    page.get_by_label("File").set_input_files(exported)
    page.locator("#import-form").get_by_role("button", name="Import").click()
    expect(page.locator(".has-error").filter(has_text="New dataset's name")).to_contain_text(
        "A dataset named “Finance demo” already exists"
    )
    assert Dataset.objects.count() == 1

    # The good file under the new name: a new dataset, with what was created table by table.
    expect(page.get_by_label("Import as a new dataset")).to_be_checked()
    page.get_by_label("New dataset's name").fill(COPY)
    page.get_by_label("File").set_input_files(exported)
    page.locator("#import-form").get_by_role("button", name="Import").click()
    expect(page.get_by_role("heading", name=f"Created “{COPY}”")).to_be_visible()
    expect(page.locator("#import-summary")).to_contain_text("a copy of “Finance demo”")
    expect(page.locator("#import-counts")).to_contain_text("criteria")
    assert serious_violations(page) == []
    snap(page, "dataset-import-done")
    copy = Dataset.objects.get(name=COPY)
    assert copy.queries.count() == demo.queries.count()
    assert not set(copy.queries.values_list("pk", flat=True)) & set(
        demo.queries.values_list("pk", flat=True)
    )
    assert roles.role_for_permissions(dataset_permissions(owner, copy)) == roles.DatasetRole.ADMIN
    run = Run.objects.get(dataset=copy)
    held = run.verdicts.count()
    assert run.expected == held > 0

    # The copy's run shows its verdicts, and that it ran no task here.
    page.goto(f"/runs/{run.pk}/")
    expect(page.locator("#run-progress")).to_contain_text(f"{held} / {held} verdicts (100.0%)")
    expect(page.locator("[data-tasks]")).to_have_text(
        "Imported: its verdicts were made elsewhere, no task ran here"
    )
