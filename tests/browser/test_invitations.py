"""Issue 28 (People) in a real browser: an admin invites an expert by email; the expert opens
the link from the email, chooses a username and password, lands on the dataset, signed in
with the role, and writes a checklist. axe-core finds nothing serious on the members page,
the invitation page, the removal confirmation and the account page."""

from __future__ import annotations

import re

import pytest
from django.core import mail
from playwright.sync_api import expect

from annotation import roles
from annotation.access import dataset_permissions
from annotation.models import Checklist, Dataset
from tests.browser.conftest import log_in
from tests.browser.test_accessibility import serious_violations
from tests.browser.test_checklist_editor import add_criterion, cite_earnings_release

pytestmark = pytest.mark.browser

PASSWORD = "silver-orchard-7193"


def test_an_invited_expert_joins_from_the_email_link(page, owner, dataset, live_server, settings):
    from django.contrib.auth import get_user_model

    settings.SITE_URL = live_server.url  # the links in emails point at this server
    log_in(page, owner.username)
    page.goto(f"/datasets/{dataset.pk}/")
    page.get_by_role("link", name="Members").click()
    invite = page.locator("#invite")
    invite.get_by_label("Email address").fill("Noor@Example.com")
    invite.get_by_label("Role").select_option("expert")
    invite.get_by_role("button", name="Send invitation").click()
    expect(page.get_by_text("Invitation sent to Noor@example.com")).to_be_visible()
    expect(page.locator("#invitations")).to_contain_text("Noor@example.com")
    # Checked with the flash message shown, then without it.
    assert serious_violations(page) == []
    page.reload()
    assert serious_violations(page) == []
    # Removing a member asks first, and says what stays.
    page.get_by_role("link", name="Remove collaborator…").click()
    expect(page.get_by_role("heading", name="Remove collaborator?")).to_be_visible()
    expect(page.locator("#footprint")).to_contain_text("0 checklists (0 submitted)")
    assert serious_violations(page) == []
    page.get_by_role("link", name="Cancel").click()
    expect(page.locator("#members")).to_contain_text("collaborator")

    (message,) = mail.outbox
    assert message.to == ["Noor@example.com"]
    link = re.search(r"(https?://\S+/invitations/\S+/)", message.body).group(1)
    assert link.startswith(live_server.url)

    # The expert, in a browser of their own.
    page.context.clear_cookies()
    page.goto(link)
    expect(page.get_by_role("heading", name="Join “Owner dataset”")).to_be_visible()
    expect(page.locator("#accept-invitation")).to_contain_text("owner invited Noor@example.com")
    assert serious_violations(page) == []
    page.get_by_label("Username").fill("noor")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_label("Password confirmation").fill(PASSWORD)
    page.get_by_role("button", name="Make my account").click()
    page.wait_for_url(f"**/datasets/{dataset.pk}/")
    expect(page.get_by_text("Welcome! You joined “Owner dataset” as an expert")).to_be_visible()
    expect(page.get_by_role("heading", name="Owner dataset")).to_be_visible()
    expect(page.locator(".topbar .who")).to_have_text("noor")
    noor = get_user_model().objects.get(username="noor")
    assert noor.email == "Noor@example.com"
    assert roles.ANNOTATE in dataset_permissions(noor, Dataset.objects.get(pk=dataset.pk))

    # Their account page, from the header.
    page.get_by_role("link", name="Account").click()
    expect(page.get_by_role("heading", name="Your account")).to_be_visible()
    assert serious_violations(page) == []

    # Signed in as the expert, they write a checklist for a query they add.
    page.goto(f"/datasets/{dataset.pk}/")
    page.get_by_role("link", name="New query").click()
    page.get_by_label("Text").fill("What did Northwind report for Q3 FY2026 revenue?")
    page.get_by_label("Query date").fill("2026-10-30")
    page.get_by_role("button", name="Add query").click()
    expect(page.get_by_text("Query added.")).to_be_visible()
    page.get_by_role("button", name="Start my checklist").click()
    add_criterion(page, "Uses the Q3 FY2026 earnings call as the primary source.", "methodology")
    add_criterion(page, "States Q3 revenue of $4.12 billion.")
    add_criterion(page, "Reports a Q3 gross margin of 61.5%.")
    add_criterion(page, "Mentions the Q4 revenue guidance of $4.3 billion.")
    add_criterion(page, "Presents guidance versus actuals in a table.", "format")
    cite_earnings_release(page, (2, 3, 4))
    page.get_by_role("button", name="Submit checklist").click()
    expect(page.get_by_text("Checklist submitted.")).to_be_visible()
    checklist = Checklist.objects.get(query__dataset=dataset)
    assert (checklist.author, checklist.status) == (noor, Checklist.Status.SUBMITTED)
    assert checklist.criteria.count() == 5

    # The link is spent.
    response = page.goto(link)
    assert response is not None and response.status == 410
    expect(page.get_by_role("heading", name="This invitation was already used")).to_be_visible()
