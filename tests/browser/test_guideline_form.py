"""An admin makes a guideline from the generic preset in a real browser: a mistake is named
under its field and nothing is saved; fixed, it saves. With UPDATE_SCREENSHOTS=1 the
screenshot lands in docs/user-guide/img/."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Guideline
from tests.browser.conftest import log_in
from tests.browser.test_checklist_editor import snap

pytestmark = pytest.mark.browser


def test_admin_creates_a_guideline_from_a_preset(page, owner):
    log_in(page, owner.username)
    page.get_by_role("link", name="Guidelines").click()
    page.get_by_role("link", name="New from the generic preset").click()
    page.get_by_label("Name", exact=True).fill("Rubric questions")
    page.get_by_label("Fewest criteria").fill("8")
    page.get_by_label("Most criteria").fill("4")
    page.locator('[data-rule="compound"]').get_by_role("checkbox").uncheck()
    page.get_by_role("button", name="Create").click()
    error = page.locator('[data-field="max_criteria"]')
    expect(error).to_contain_text("must be at least min_criteria (8)")
    assert not Guideline.objects.filter(name="Rubric questions").exists()
    error.scroll_into_view_if_needed()
    snap(page, "guideline-form-error")

    page.get_by_label("Most criteria").fill("12")
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_role("heading", name="Rubric questions")).to_be_visible()
    saved = Guideline.objects.get(name="Rubric questions")
    assert (saved.config["min_criteria"], saved.config["max_criteria"]) == (8, 12)
    assert saved.config["rules"]["compound"]["enabled"] is False
    assert saved.config["rules"]["action-verb"]["enabled"] is False  # from the preset
