"""Issue 15 in a real browser: an expert adds a query and writes its checklist; a vague
criterion is refused at submit with a message naming its row number, which links to it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Checklist, Query
from tests.browser.conftest import log_in
from tests.browser.test_checklist_editor import add_criterion, cite_earnings_release, row

pytestmark = pytest.mark.browser


def test_an_expert_creates_a_query_and_a_checklist(page, collaborator, dataset):
    log_in(page, collaborator.username)
    page.goto(f"/datasets/{dataset.pk}/")
    page.get_by_role("link", name="New query").click()
    expect(page.get_by_role("heading", name="New query")).to_be_visible()
    page.get_by_label("Text").fill("What did Northwind report for Q3 FY2026 revenue?")
    page.get_by_label("Query date").fill("2026-10-30")
    page.get_by_label("Complexity").select_option("simple")
    page.get_by_role("button", name="Add query").click()
    expect(page.get_by_text("Query added.")).to_be_visible()
    query = Query.objects.get()
    assert (query.created_by, query.complexity) == (collaborator, "simple")
    expect(page.get_by_role("link", name="Edit query")).to_be_visible()

    page.get_by_role("button", name="Start my checklist").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Northwind")
    add_criterion(page, "Uses the Q3 FY2026 earnings call as the primary source.", "methodology")
    # Source-type chips belong to fact criteria only.
    expect(row(page, 1).locator("fieldset.source-types")).to_be_hidden()
    add_criterion(page, "States Q3 revenue of $4.12 billion.")
    add_criterion(page, "Reports a Q3 gross margin of 61.5%.")
    add_criterion(page, "Provides a good and comprehensive overview of the relevant information.")
    add_criterion(page, "Presents guidance versus actuals in a table.", "format")
    cite_earnings_release(page, (2, 3, 4))
    expect(row(page, 2).locator("fieldset.source-types")).to_be_visible()
    vague = row(page, 4)
    expect(vague.locator('[data-rule="vague-wording"]')).to_contain_text("“good”")

    page.get_by_role("button", name="Submit checklist").click()
    banner = page.locator("#rejected")
    expect(banner).to_contain_text("Not submitted: 2 rule errors")
    first = banner.locator("ol li").first
    expect(first).to_contain_text("Criterion 4 (“Provides a good and comprehensive overview")
    link = first.get_by_role("link", name="Criterion 4")
    link.click()
    assert page.url.endswith(f"#criterion-{Checklist.objects.get().criteria.get(position=4).pk}")
    assert Checklist.objects.get().status == Checklist.Status.DRAFT

    # Reworded with what exactly the answer must contain, it passes and submits.
    row(page, 4).locator("textarea.criterion-text").fill(
        "Mentions the Q4 revenue guidance of $4.3 billion."
    )
    expect(row(page, 4).locator('[data-rule="vague-wording"]')).to_have_count(0)
    expect(page.locator("[data-error-count]")).to_have_text("0")
    page.get_by_role("button", name="Submit checklist").click()
    expect(page.get_by_text("Checklist submitted.")).to_be_visible()
    assert Checklist.objects.get().status == Checklist.Status.SUBMITTED
