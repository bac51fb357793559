"""A reviewer labels ten criteria from the keyboard alone in a real browser; the labels are in
the database. With UPDATE_SCREENSHOTS=1 the screenshot lands in docs/user-guide/img/."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from evaluation.labels.models import HumanLabel
from tests.browser.conftest import log_in
from tests.browser.test_checklist_editor import snap
from tests.factories import PanelFactory, external_judges
from tests.support.builders import checklisted_query, finished_run

pytestmark = pytest.mark.browser


def wait_for_labels(count: int, timeout: float = 10.0) -> list[tuple[int, str]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = list(HumanLabel.objects.order_by("criterion__position").values_list(
            "criterion__position", "label"))  # fmt: skip
        if len(rows) >= count:
            return rows
        time.sleep(0.1)
    return rows


def test_reviewer_labels_ten_criteria_from_the_keyboard(page, reviewed_dataset, reviewer):
    made = checklisted_query(reviewed_dataset, criteria=42, answers=1)
    crits, (answer,) = made.criteria, made.answers
    answer.text = (
        "## Q3 FY2026\n\nRevenue was **$4.12 billion**, up 18% year on year, with a gross "
        "margin of 61.5%.\n\n| | Guidance | Actual |\n|---|---|---|\n| Revenue | $3.9–4.1bn "
        "| $4.12bn |\n| Gross margin | 60% | 61.5% |\n\nManagement guided Q4 revenue to "
        "$4.3–4.45 billion, citing data-centre demand.\n\n<script>alert(1)</script>"
    )
    answer.save()
    pattern = [("pass", "pass", "fail"), ("fail", "fail", "fail"), ("pass", "unparseable", "pass")]
    finished_run(reviewed_dataset, PanelFactory(judges=external_judges(3)),
                 {(answer, c): pattern[i % 3] for i, c in enumerate(crits)})  # fmt: skip
    log_in(page, reviewer.username)
    page.goto(f"/answers/{answer.pk}/review/")
    first = page.locator(".review-row").first
    expect(first).to_be_focused()
    expect(page.get_by_text("p pass · f fail")).to_be_visible()

    keys = "pfppfpffpp"  # the labels of criteria 1–10, each followed by the next criterion
    for key in keys:
        page.keyboard.press(key)
    expect(page.locator(".review-row").nth(10)).to_be_focused()
    expect(page.locator(".review-row.labelled")).to_have_count(10)
    expected = [(i + 1, "pass" if k == "p" else "fail") for i, k in enumerate(keys)]
    assert wait_for_labels(10) == expected
    assert set(HumanLabel.objects.values_list("rater", "source").distinct()) == {
        ("reviewer", "app")
    }

    # k goes back to criterion 10, f changes its label; u undoes that change.
    page.keyboard.press("k")
    expect(page.locator(".review-row").nth(9)).to_be_focused()
    page.keyboard.press("f")
    expect(page.locator(".review-row").nth(9).locator("[data-own]")).to_have_text("fail")
    page.keyboard.press("u")
    expect(page.locator(".review-row").nth(9).locator("[data-own]")).to_have_text("pass")
    expect(page.locator(".review-row").nth(9)).to_be_focused()
    assert wait_for_labels(10) == expected
    expect(page.locator("[data-labelled]")).to_have_text("10")
    assert page.locator(".answer-text script").count() == 0  # sanitised
    page.keyboard.press("k")
    page.keyboard.press("k")
    page.evaluate("window.scrollTo(0, 0)")
    snap(page, "review-keyboard")
