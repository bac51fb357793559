"""The Content-Security-Policy in a real browser: htmx pages work under it (every browser
test fails on a CSP report, tests/browser/conftest.py), and it does block an inline script
that got into a page."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation import services
from tests.browser.conftest import log_in

pytestmark = pytest.mark.browser


def test_htmx_editing_works_and_inline_script_is_blocked(request, page, collaborator, query):
    request.node.allows_csp_violations = True  # this test provokes one on purpose
    checklist = services.checklist_start(query=query, by=collaborator)
    log_in(page, collaborator.username)
    page.goto(f"/checklists/{checklist.pk}/")
    box = page.locator("#new-criterion-text")
    box.fill("States Q3 revenue of $4.12 billion.")
    box.press("Control+Enter")  # htmx posts, swaps the row in, app.js resets the form
    expect(page.locator("#criteria-list > li")).to_have_count(1)
    expect(box).to_have_value("")
    assert page.csp_violations == []

    ran = page.evaluate(
        """() => {
            const s = document.createElement("script");
            s.textContent = "window.__inlineRan = true";
            document.body.appendChild(s);
            return window.__inlineRan === true;
        }"""
    )
    assert ran is False
    page.wait_for_timeout(200)
    assert any("script-src" in v for v in page.csp_violations), page.csp_violations


def test_the_admin_and_the_api_docs_pass_the_policy(page, admin_user):
    log_in(page, admin_user.username, "password")
    for url in ("/admin/", "/admin/annotation/checklist/", "/admin/audit/historicalcriterion/"):
        page.goto(url)
        expect(page.locator("#content")).to_be_visible()
    page.wait_for_timeout(300)
    assert page.csp_violations == [], "admin"
    page.goto("/api/datasets/")  # DRF's browsable API
    expect(page.locator(".response-info")).to_be_visible()
    page.wait_for_timeout(300)
    assert page.csp_violations == [], "browsable API"
    page.goto("/api/docs/")
    expect(page.locator(".swagger-ui")).to_be_visible()
    page.wait_for_timeout(300)
    assert page.csp_violations == []
