"""An admin opens a query's overlap heatmap in a real browser and drills into one cell: the
criteria of B that A's perfect answer covered appear below the matrix. With
UPDATE_SCREENSHOTS=1 the screenshots land in docs/user-guide/img/."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from evaluation.cross_evaluation.services import perfect_answer_save
from tests.browser.conftest import log_in
from tests.browser.test_checklist_editor import snap
from tests.evaluation.cross_evaluation.two_queries import (
    codes,
    expert,
    grade_directly,
)
from tests.support.builders import checklisted_query

pytestmark = pytest.mark.browser


def test_admin_opens_the_heatmap_and_drills_into_a_cell(page, dataset, query, owner):
    ann, bob, cat = expert(dataset, "ann"), expert(dataset, "bob"), expert(dataset, "cat")
    a = checklisted_query(query=query, author=ann, criteria=codes(1, 2, 3)).checklist
    b = checklisted_query(query=query, author=bob, criteria=codes(1, 4, 5, 6)).checklist
    c = checklisted_query(query=query, author=cat, criteria=codes(2, 7)).checklist
    perfect_answer_save(checklist=a, text="Figures: **K1**, K2, K3 and K4.", by=ann)
    perfect_answer_save(checklist=b, text="Figures: K1, K4, K5, K6 and K2.", by=bob)
    perfect_answer_save(checklist=c, text="Figures: K2 and K7.", by=cat)
    grade_directly(dataset)

    log_in(page, owner.username)
    page.goto(f"/datasets/{dataset.pk}/cross-evaluation/")
    expect(page.locator("[data-dataset-mean]")).to_have_text("41.7%")  # (2/4+1/2+2/3+1/2+1/3+0)/6
    snap(page, "cross-evaluation-dataset")
    page.get_by_role("link", name=query.text[:40]).click()

    matrix = page.locator("#overlap-matrix")
    expect(matrix.locator("td[data-cell]")).to_have_count(9)
    cell = matrix.locator(f'td[data-cell="{a.pk}-{b.pk}"]')
    expect(cell.locator(".value")).to_have_text("50%")
    expect(cell.locator(".counts")).to_have_text("2/4")
    expect(page.locator("#cell-detail")).to_contain_text("Click a cell")

    cell.get_by_role("link").click()  # htmx swaps the drill-down in, no page load
    detail = page.locator("#cell-detail")
    expect(detail.locator("h2")).to_have_text("ann's perfect answer against bob's criteria")
    expect(detail).to_contain_text("2 of 4 decided criteria covered")
    rows = detail.locator("[data-criterion]")
    expect(rows).to_have_count(4)
    expect(rows.nth(0)).to_contain_text("States figure K1.")
    expect(rows.nth(0).locator(".badge").first).to_have_text("covered")
    expect(rows.nth(2)).to_contain_text("States figure K5.")
    expect(rows.nth(2).locator(".badge").first).to_have_text("not covered")
    expect(detail.get_by_role("link", name="The answer with every vote")).to_be_visible()
    snap(page, "cross-evaluation-heatmap")

    # The self-check cell is there too, apart from the mean.
    matrix.locator(f'td[data-cell="{c.pk}-{c.pk}"] a').click()
    expect(detail.locator("h2")).to_contain_text("(self-check)")
    expect(detail).to_contain_text("2 of 2 decided criteria covered")
