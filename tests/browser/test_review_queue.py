"""The review queue in a real browser (issue 15): the disagreement queue names each
criterion's checklist author, filters by author without a reload, and the review page says
"Item X of N" within the filtered queue, singles out the item's criterion and skips with
`s`. And the new panel form: members in a real table, posted as typed. With
UPDATE_SCREENSHOTS=1 the screenshots land in docs/user-guide/img/."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from evaluation.judges.models import Judge, Panel
from evaluation.labels.models import HumanLabel
from tests.browser.conftest import log_in
from tests.browser.test_checklist_editor import snap
from tests.evaluation.review.two_experts import TWIN, build_two_experts

pytestmark = pytest.mark.browser


def test_queue_shows_authors_filters_and_item_x_of_n(page, reviewed_dataset, reviewer):
    two = build_two_experts(reviewed_dataset)
    log_in(page, reviewer.username)
    page.goto(f"/datasets/{reviewed_dataset.pk}/review/?queue=disagreement")
    rows = page.locator("#queue-table tbody tr")
    expect(rows).to_have_count(7)
    twins = rows.filter(has_text=TWIN)
    expect(twins).to_have_count(4)
    expect(twins.filter(has_text="checklist by alice")).to_have_count(2)
    expect(twins.filter(has_text="checklist by bob")).to_have_count(2)
    snap(page, "review-queue")

    page.get_by_label("Checklist author").select_option(label="bob")  # htmx, no reload
    expect(rows).to_have_count(4)
    expect(page).to_have_url(re.compile(rf"author={two.bob.pk}"))
    page.get_by_role("link", name="Start reviewing").click()
    position = page.locator("[data-queue-position]")
    expect(position).to_contain_text("Item 1 of 4")
    expect(position).to_contain_text("filtered")
    current = page.locator(".review-row.queue-item")
    expect(current).to_contain_text("checklist by bob")
    expect(current).to_be_focused()
    expect(page.locator(".review-row.other-item")).to_have_count(2)
    snap(page, "review-item")

    page.keyboard.press("s")  # skip: the next item, nothing labelled
    expect(position).to_contain_text("Item 2 of 4")
    page.keyboard.press("n")
    expect(position).to_contain_text("Item 3 of 4")
    assert not HumanLabel.objects.exists()


def test_new_panel_members_form_is_a_table_and_posts_its_rows(page, owner):
    a, b = (
        Judge.objects.create(name=name, base_url="http://127.0.0.1:9/v1", model="m")
        for name in ("Model A", "Model B")
    )
    log_in(page, owner.username)
    page.goto("/panels/new/")
    first = page.locator(".members-table tbody tr").first
    cells = first.locator("td")
    expect(cells).to_have_count(3)
    boxes = [cells.nth(i).bounding_box() for i in range(3)]
    # Judge, Samples and Temperatures side by side on one line, not stacked in one column.
    assert boxes[0]["x"] < boxes[1]["x"] < boxes[2]["x"]
    assert abs(boxes[0]["y"] - boxes[2]["y"]) < 2
    # The lone checkbox sits beside its label, at the left edge of the form.
    graded = page.get_by_label("Graded view (1–5)")
    label = page.locator("label[for=id_graded]").bounding_box()
    box = graded.bounding_box()
    assert box["x"] < label["x"] and abs(box["y"] - label["y"]) < 12
    assert box["x"] - page.locator("#id_name").bounding_box()["x"] < 8  # its own margin only

    page.get_by_label("Name", exact=True).fill("Two models")
    page.get_by_label("Judge (row 1)").select_option(value=str(a.pk))
    page.get_by_label("Samples (row 1)").fill("3")
    page.get_by_label("Temperatures (row 1)").fill("0, 0.5, 1")
    page.get_by_label("Judge (row 2)").select_option(value=str(b.pk))
    page.get_by_label("Samples (row 2)").fill("1")
    graded.check()
    page.get_by_role("button", name="Create").click()
    expect(page.locator("h1")).to_have_text("Two models")
    panel = Panel.objects.get(name="Two models")
    assert panel.graded
    members = {m.judge.name: (m.samples, m.temperatures) for m in panel.members.all()}
    assert members == {"Model A": (3, [0.0, 0.5, 1.0]), "Model B": (1, [])}
