"""An expert writes a checklist in a real browser, sees live guideline errors, fixes them
and submits. With UPDATE_SCREENSHOTS=1 the screenshots land in docs/user-guide/img/."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from annotation.models import Checklist
from tests.browser.conftest import ARTIFACTS, log_in

pytestmark = pytest.mark.browser
DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "user-guide" / "img"


def snap(page, name: str) -> None:
    """Screenshots for the user guide, taken where a reader would look."""
    folder = DOCS_IMG if os.environ.get("UPDATE_SCREENSHOTS") else ARTIFACTS / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), full_page=False)


def add_criterion(page, text: str, kind: str = "fact") -> None:
    box = page.locator("#new-criterion-text")
    count = page.locator("#criteria-list > li").count()
    page.locator(".new-criterion-form select[name=kind]").select_option(kind)
    box.fill(text)
    box.press("Control+Enter")  # the keyboard shortcut adds it
    expect(page.locator("#criteria-list > li")).to_have_count(count + 1)
    expect(box).to_have_value("")


def row(page, position: int):
    return page.locator("#criteria-list > li").nth(position - 1)


def cite_earnings_release(page, positions) -> None:
    """Tick the "Earnings release" source type of the fact criteria at `positions`, each
    autosaved before the next."""
    for position in positions:
        row(page, position).get_by_role("checkbox", name="Earnings release").check()
        expect(row(page, position).locator("[data-saved]")).to_be_visible()


def test_expert_writes_fixes_and_submits_a_checklist(page, collaborator, query):
    query.query_date = dt.date(2026, 10, 30)
    query.save()
    log_in(page, collaborator.username)
    page.goto(f"/queries/{query.pk}/")
    snap(page, "query-page")
    page.get_by_role("button", name="Start my checklist").click()
    expect(page.get_by_role("button", name="Submit checklist")).to_be_visible()

    add_criterion(page, "Uses the Q3 FY2026 earnings call as the primary source.", "methodology")
    add_criterion(page, "Revenue of $4.12 billion in Q3.")  # no action verb
    add_criterion(page, "Reports a Q3 gross margin of 61.5%.")
    add_criterion(page, "Mentions the Q4 revenue guidance of $4.3 billion.")
    add_criterion(page, "Explains that data-centre demand drove the Q3 beat.")
    add_criterion(page, "Presents guidance versus actuals in a table.", "format")

    # Fact criteria need a source type: tick one in each (autosaves).
    for position in (2, 3, 4, 5):
        row(page, position).get_by_role("checkbox", name="Earnings release").check()
        expect(row(page, position).locator('[data-rule="fact-source-type"]')).to_have_count(0)

    second = row(page, 2)
    expect(second.locator('[data-rule="action-verb"]')).to_be_visible()

    # A citation published after the query date is hindsight leakage.
    second.locator("summary", has_text="Cite a source").click()
    second.get_by_label("Title").fill("Q3 FY2026 10-Q")
    second.get_by_label("Published on").fill("2026-11-15")
    second.get_by_role("button", name="Add citation").click()
    second = row(page, 2)
    expect(second.locator('[data-rule="citation-after-query-date"]')).to_be_visible()
    expect(page.locator("[data-error-count]")).to_have_text("2")
    snap(page, "editor-live-errors")

    # Fix both: the errors disappear as the expert types, before any submit.
    second.locator("textarea.criterion-text").fill("States Q3 revenue of $4.12 billion.")
    expect(second.locator('[data-rule="action-verb"]')).to_have_count(0)
    second.get_by_role("button", name="Remove citation Q3 FY2026 10-Q").click()
    # Wait for the row to be swapped in again: opening the form of the old row would lose
    # it to the swap (seen under load in CI).
    expect(row(page, 2).locator(".citation")).to_have_count(0)
    second = row(page, 2)
    second.locator("summary", has_text="Cite a source").click()
    second.get_by_label("Title").fill("Q3 FY2026 earnings release")
    second.get_by_label("Published on").fill("2026-10-28")
    second.get_by_role("button", name="Add citation").click()
    expect(row(page, 2).locator(".citation")).to_contain_text("2026-10-28")
    expect(page.locator("[data-error-count]")).to_have_text("0")
    snap(page, "editor-fixed")

    page.get_by_role("button", name="Submit checklist").click()
    expect(page.get_by_text("Checklist submitted.")).to_be_visible()
    expect(page.locator(".badge.status-submitted").first).to_be_visible()
    snap(page, "editor-submitted")
    checklist = Checklist.objects.get(query=query, author=collaborator)
    assert checklist.status == Checklist.Status.SUBMITTED
    assert checklist.criteria.count() == 6
    assert checklist.criteria.get(position=2).text == "States Q3 revenue of $4.12 billion."


def test_reordering_from_the_keyboard(page, collaborator, query):
    from annotation import services
    from tests.factories import valid_criteria

    checklist = services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria()
    )
    log_in(page, collaborator.username)
    page.goto(f"/checklists/{checklist.pk}/")
    third = row(page, 3).locator("textarea.criterion-text")
    text = third.input_value()
    third.focus()
    page.keyboard.press("Alt+ArrowUp")
    expect(row(page, 2).locator("textarea.criterion-text")).to_have_value(text)
    expect(row(page, 2).locator("textarea.criterion-text")).to_be_focused()
    assert checklist.criteria.get(position=2).text == text
