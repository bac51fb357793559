"""A reviewer opens the analytics page in a real browser: the complexity chart has one line
per system and the experts' overlap drawn across it as the human line; clicking a bucket
drills into that bucket's checklists, each linked to its answer page. After a label the page
shows the figures kept before it, marked updating, and turns to the fresh ones by itself
once the refresh has kept them."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from annotation import roles
from annotation.services import dataset_set_role
from evaluation.analytics import figures
from evaluation.analytics.tasks import refresh_analytics
from evaluation.answers.models import Answer
from evaluation.cross_evaluation.services import perfect_answer_save
from evaluation.review.services import label_set
from tests.browser.conftest import log_in
from tests.browser.test_checklist_editor import snap
from tests.evaluation.analytics.known import build_known
from tests.evaluation.cross_evaluation.two_queries import (
    codes,
    expert,
    grade_directly,
)
from tests.support.builders import checklisted_query

pytestmark = pytest.mark.browser


def test_complexity_chart_with_the_human_line_drilled_into_a_bucket(page, dataset, query, reviewer):
    dataset_set_role(dataset=dataset, user=reviewer, role=roles.DatasetRole.REVIEWER)
    # The human line: three experts' perfect answers graded on each other's checklists.
    ann, bob, cat = expert(dataset, "ann"), expert(dataset, "bob"), expert(dataset, "cat")
    a = checklisted_query(query=query, author=ann, criteria=codes(1, 2, 3)).checklist
    b = checklisted_query(query=query, author=bob, criteria=codes(1, 4, 5, 6)).checklist
    c = checklisted_query(query=query, author=cat, criteria=codes(2, 7)).checklist
    perfect_answer_save(checklist=a, text="Figures: **K1**, K2, K3 and K4.", by=ann)
    perfect_answer_save(checklist=b, text="Figures: K1, K4, K5, K6 and K2.", by=bob)
    perfect_answer_save(checklist=c, text="Figures: K2 and K7.", by=cat)
    grade_directly(dataset)
    # Two systems graded on checklists of 8, 12, 12, 17, 22 and 36 criteria.
    known = build_known(dataset)
    figures.warm(known.run)  # as the task at the run's end does

    log_in(page, reviewer.username)
    page.goto(f"/datasets/{dataset.pk}/")
    page.get_by_role("link", name="Analytics", exact=True).click()
    chart = page.locator("#complexity-chart svg")
    expect(chart).to_be_visible()
    expect(chart.locator("g.series")).to_have_count(2)
    human = chart.locator("g.human-line")
    expect(human).to_have_count(1)
    expect(human.locator("line")).to_have_count(1)
    # 41.7% overlap: the line sits at 41.7% of the plot's height from the bottom (y = 16
    # at 100%, 276 at 0%).
    y = float(human.get_attribute("data-y"))
    assert y == pytest.approx(16 + (1 - 5 / 12) * 260, abs=0.01)
    expect(page.locator("#complexity-table .human-row")).to_contain_text("41.7%")
    chart.scroll_into_view_if_needed()
    snap(page, "analytics-complexity")

    chart.locator("a.bucket-link", has_text="10–14").click()
    page.wait_for_url("**bucket=10-14**")
    rows = page.locator("#bucket-rows tbody tr")
    expect(rows).to_have_count(4)  # two checklists of 12 criteria × two systems
    expect(rows.first.locator("td").nth(3)).to_have_text("12")
    rows.first.get_by_role("link").click()
    page.wait_for_url(f"**/runs/{known.run.pk}/answers/**")


def test_the_complexity_chart_downloads_as_png(page, dataset, reviewer):
    """The PNG is drawn in the browser from the inline SVG (static/js/chart-png.js): no
    network, nothing inline under the Content-Security-Policy."""
    dataset_set_role(dataset=dataset, user=reviewer, role=roles.DatasetRole.REVIEWER)
    figures.warm(build_known(dataset).run)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    log_in(page, reviewer.username)
    page.goto(f"/datasets/{dataset.pk}/analytics/")
    button = page.get_by_role("button", name="Download PNG")
    with page.expect_download() as info:
        button.click()
    download = info.value
    assert download.suggested_filename.endswith(".png")
    data = Path(download.path()).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width = int.from_bytes(data[16:20], "big")
    assert width == 2 * int(page.locator("#complexity-chart svg").get_attribute("width"))
    assert not [e for e in errors if "Content Security Policy" in e]


def test_after_a_label_the_page_turns_fresh_by_itself(page, dataset, reviewer):
    dataset_set_role(dataset=dataset, user=reviewer, role=roles.DatasetRole.REVIEWER)
    known = build_known(dataset)
    figures.warm(known.run)
    answer = Answer.objects.get(pk=next(iter(known.answers)))
    criterion = answer.query.checklists.first().criteria.first()
    label_set(answer=answer, criterion=criterion, reviewer=reviewer, label="fail")

    log_in(page, reviewer.username)
    page.goto(f"/datasets/{dataset.pk}/analytics/")
    note = page.locator("#figures-updating")
    expect(note).to_contain_text("before the latest labels")
    expect(page.locator("#system-scores")).to_be_visible()  # the figures kept before
    # The worker's part (run here): the fresh figures are kept; the page's poll sees them
    # within 2 s and reloads the page.
    assert refresh_analytics(known.run.pk) is True
    expect(note).to_have_count(0, timeout=10_000)
    expect(page.locator("#system-scores")).to_be_visible()
