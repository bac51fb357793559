"""Issue 28 in a real browser: the panel form's Add row button adds rows the server takes;
Test connection clears the page's old message and says one sentence; the Base URL, bucket
edges and time inputs wear the form style; and the pages this issue changed stay axe-clean
(the agreement page's no-overlap note, the perfect answers' queue, criterion health with
its query and author columns, an empty dataset, a site-wide page's refusal)."""

from __future__ import annotations

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from annotation import roles
from annotation.services import dataset_set_role
from evaluation.analytics import figures
from evaluation.cross_evaluation.services import perfect_answer_save
from evaluation.judges.models import Judge, Panel
from tests.browser.conftest import log_in
from tests.browser.test_accessibility import serious_violations
from tests.factories import PanelFactory, external_judges
from tests.support.builders import checklisted_query, finished_run, human_label

pytestmark = pytest.mark.browser
STYLED_BORDER = "rgb(195, 202, 211)"  # app.css: the inputs' 1px #c3cad3 border


def test_add_row_adds_panel_members_the_server_takes(page, owner):
    judges = [
        Judge.objects.create(name=name, base_url="http://x/v1", model="m")
        for name in ("Alpha", "Beta", "Gamma")
    ]
    log_in(page, owner.username)
    page.goto(reverse("panel-create"))
    page.get_by_label("Name").fill("Three judges")
    rows = page.locator("tbody[data-rows-of=members] tr")
    expect(rows).to_have_count(2)
    add = page.get_by_role("button", name="Add row")
    expect(add).to_be_visible()
    add.click()
    expect(rows).to_have_count(3)
    # The new row is numbered for the server and for screen readers, and has the focus.
    judge = page.locator("#id_members-2-judge")
    expect(judge).to_be_focused()
    expect(page.get_by_label("Judge (row 3)")).to_have_count(1)
    assert page.locator("input[name=members-TOTAL_FORMS]").input_value() == "3"
    assert serious_violations(page) == []
    for row, judge in enumerate(judges):
        page.locator(f"#id_members-{row}-judge").select_option(value=str(judge.pk))
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_text("Panel “Three judges” saved.")).to_be_visible()
    panel = Panel.objects.get(name="Three judges")
    assert sorted(m.judge.name for m in panel.members.all()) == ["Alpha", "Beta", "Gamma"]


def test_test_connection_clears_the_created_message_and_says_one_sentence(page, owner, monkeypatch):
    monkeypatch.setenv("JUDGE_KEY_VARIABLES", "JUDGE_KEY_ISSUE28")
    monkeypatch.delenv("JUDGE_KEY_ISSUE28", raising=False)
    log_in(page, owner.username)
    page.goto(reverse("judge-create"))
    page.get_by_label("Name").fill("Keyless")
    page.get_by_label("Base URL").fill("http://127.0.0.1:9/v1")
    page.get_by_label("Model").fill("m")
    page.get_by_label("API key variable").fill("JUDGE_KEY_ISSUE28")
    page.get_by_role("button", name="Create").click()
    created = page.get_by_text("Judge “Keyless” created.")
    expect(created).to_be_visible()
    base_url = page.get_by_label("Base URL")
    assert base_url.evaluate("e => getComputedStyle(e).borderTopColor") == STYLED_BORDER
    page.get_by_role("button", name="Test connection").click()
    result = page.locator("[data-connection=missing_key]")
    expect(result).to_be_visible()
    expect(created).to_have_count(0)
    text = result.inner_text()
    assert "missing_key" not in text and text.count("no call was made") == 1
    assert serious_violations(page) == []


def test_inputs_without_a_type_and_time_inputs_wear_the_form_style(page, reviewer, dataset):
    dataset_set_role(dataset=dataset, user=reviewer, role=roles.DatasetRole.REVIEWER)
    made = checklisted_query(dataset, criteria=2, answers=1)
    run = finished_run(
        dataset, PanelFactory(judges=external_judges(1)),
        {(made.answers[0], c): ("pass",) for c in made.criteria},
    )  # fmt: skip
    figures.warm(run)
    log_in(page, reviewer.username)
    page.goto(reverse("dataset-analytics", args=[dataset.pk]))
    edges = page.get_by_label("Bucket edges")
    assert edges.evaluate("e => getComputedStyle(e).borderTopColor") == STYLED_BORDER
    # The schedule page's time input, by the same rule (its page is not this test's).
    style = page.evaluate(
        """() => { const i = document.createElement("input"); i.type = "time";
        document.querySelector("main").append(i);
        return getComputedStyle(i).borderTopColor; }"""
    )
    assert style == STYLED_BORDER


def test_the_pages_this_issue_changed_are_axe_clean(page, owner, reviewer, collaborator, dataset):
    dataset_set_role(dataset=dataset, user=reviewer, role=roles.DatasetRole.REVIEWER)
    log_in(page, owner.username)
    # An empty dataset first: the empty state with its links.
    page.goto(reverse("dataset-detail", args=[dataset.pk]))
    expect(page.get_by_text("No queries yet.")).to_be_visible()
    assert serious_violations(page) == []
    made = checklisted_query(dataset, criteria=3, answers=2)
    same = checklisted_query(query=made.query, criteria=3, author=collaborator)
    panel = PanelFactory(judges=external_judges(2))
    run = finished_run(
        dataset, panel,
        {(a, c): ("pass", "fail") for a in made.answers for c in made.criteria + same.criteria},
    )  # fmt: skip
    perfect = perfect_answer_save(checklist=made.checklist, text="All.", by=owner)
    cross = finished_run(dataset, panel, {(perfect, c): ("pass", "pass") for c in same.criteria})
    cross.kind = "cross_evaluation"
    cross.save(update_fields=["kind"])
    human_label(perfect, same.criteria[0], "reviewer", "pass")
    figures.warm(run)
    pages = [
        # The labels are on a perfect answer only: the note says where they count.
        (reverse("dataset-agreement", args=[dataset.pk]), "[data-no-overlap]"),
        (reverse("review-queue", args=[dataset.pk]) + "?answers=perfect", "#queue-table"),
        (reverse("analytics-criteria", args=[dataset.pk]), "#criterion-health"),
        (reverse("dataset-runs", args=[dataset.pk]), "h1"),
    ]
    for url, shown in pages:
        page.goto(url)
        expect(page.locator(shown).first).to_be_visible()
        assert serious_violations(page) == [], url
    # A site-wide page, refused to an expert: the refusal names the site-wide role.
    page.context.clear_cookies()
    log_in(page, collaborator.username)
    response = page.goto(reverse("judge-list"))
    assert response is not None and response.status == 403
    expect(page.get_by_text("needs the Admin role site-wide")).to_be_visible()
    assert serious_violations(page) == []
