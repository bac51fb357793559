"""Issue 40 in a real browser: a first day without guesswork.

- An invitation is accepted through the link its email carries, with the server on a port
  that is not 8000 (the live server's): SITE_URL as `dev.py run` sets it from HOST and
  PORT, and, unset, the address the admin invites from.
- The dataset's pages are grouped by job, the page open marked aria-current="page".
- After labelling an item and pressing `n`, the counter reads the next number.
- A new token's Copy buttons put the key and a ready request on the clipboard.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from django.conf import settings as django_settings
from django.core import mail
from django.urls import reverse
from playwright.sync_api import expect

import dev
from tests.browser.conftest import log_in
from tests.browser.test_accessibility import demo, serious_violations  # noqa: F401 (fixture)
from tests.browser.test_checklist_editor import snap

pytestmark = pytest.mark.browser

PASSWORD = "amber-lantern-5829"


def email_link(message) -> str:
    return re.search(r"(https?://\S+/invitations/\S+/)", message.body).group(1)


def invite(page, dataset, email: str) -> None:
    page.goto(reverse("dataset-members", args=[dataset.pk]))
    invite = page.locator("#invite")
    invite.get_by_label("Email address").fill(email)
    invite.get_by_label("Role").select_option("expert")
    invite.get_by_role("button", name="Send invitation").click()
    expect(page.get_by_text(f"Invitation sent to {email}")).to_be_visible()


def test_an_invitation_is_accepted_through_the_emails_link_on_another_port(
    page, owner, dataset, live_server, settings
):
    server = urlsplit(live_server.url)
    assert server.port != 8000
    # SITE_URL as `PORT=<the live server's> python3.11 dev.py run` sets it.
    settings.SITE_URL = dev.site_url(server.hostname, str(server.port))
    log_in(page, owner.username)
    page.goto(reverse("dataset-members", args=[dataset.pk]))
    note = page.locator("#invite")
    expect(note.locator("[data-link-site]")).to_have_text(settings.SITE_URL)
    invite(page, dataset, "ines@example.com")
    (message,) = mail.outbox
    link = email_link(message)
    assert urlsplit(link).port == server.port and ":8000" not in message.body

    # Unset, the link names the address the admin's browser uses.
    settings.SITE_URL = ""
    invite(page, dataset, "omar@example.com")
    assert urlsplit(email_link(mail.outbox[-1])).netloc == server.netloc

    # Ines, in a browser of her own, opens the link from the email.
    page.context.clear_cookies()
    page.goto(link)
    expect(page.get_by_role("heading", name="Join “Owner dataset”")).to_be_visible()
    expect(page.locator("#accept-invitation")).to_contain_text("join as an expert")
    page.get_by_label("Username").fill("ines")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_label("Password confirmation").fill(PASSWORD)
    page.get_by_role("button", name="Make my account").click()
    page.wait_for_url(f"{live_server.url}/datasets/{dataset.pk}/")
    expect(page.get_by_text("Welcome! You joined “Owner dataset” as an expert")).to_be_visible()
    expect(page.locator(".topbar .who")).to_have_text("ines")


def test_the_dataset_pages_are_grouped_by_job_with_the_page_open_marked(page, demo):  # noqa: F811
    dataset = demo[0]
    log_in(page, "admin", django_settings.DEMO_PASSWORD)
    page.goto(reverse("dataset-detail", args=[dataset.pk]))
    nav = page.get_by_role("navigation", name="Dataset")
    groups = nav.locator(".nav-group-name")
    expect(groups).to_have_text(["Author", "Judge", "Review", "Analyse", "Administer"])
    expect(nav.locator("[aria-current=page]")).to_have_text("Queries")
    expect(nav.get_by_role("list", name="Administer").get_by_role("link")).to_have_text(
        ["Members", "Settings", "Export", "Import"]
    )
    snap(page, "dataset-navigation")
    assert serious_violations(page) == []

    nav.get_by_role("link", name="Runs", exact=True).click()
    page.wait_for_url(f"**/datasets/{dataset.pk}/runs/")
    nav = page.get_by_role("navigation", name="Dataset")
    expect(nav.locator("[aria-current=page]")).to_have_text("Runs")
    expect(nav.locator("[aria-current]")).to_have_count(1)
    nav.get_by_role("link", name="Schedules").click()
    expect(page.locator("#scheduler-state")).to_contain_text("The scheduler (celery beat) was")
    expect(nav.locator("[aria-current=page]")).to_have_text("Schedules")
    assert serious_violations(page) == []

    # A reviewer sees the groups of their work only.
    page.context.clear_cookies()
    log_in(page, "rita", django_settings.DEMO_PASSWORD)
    page.goto(reverse("review-queue", args=[dataset.pk]))
    nav = page.get_by_role("navigation", name="Dataset")
    expect(nav.locator(".nav-group-name")).to_have_text(["Author", "Judge", "Review", "Analyse"])
    expect(nav.locator("[aria-current=page]")).to_have_text("Review")
    expect(nav.get_by_role("link", name="Members")).to_have_count(0)
    assert serious_violations(page) == []

    # The health page as an anonymous visitor says what its status covers.
    page.context.clear_cookies()
    page.goto("/healthz")
    expect(page.locator("[data-visitor-summary]")).to_contain_text("shown to staff only")
    assert serious_violations(page) == []


def test_the_item_counter_counts_on_after_labelling_and_n(page, demo):  # noqa: F811
    dataset = demo[0]
    log_in(page, "rita", django_settings.DEMO_PASSWORD)
    page.goto(reverse("review-queue", args=[dataset.pk]) + "?queue=labelling")
    page.get_by_role("link", name="Start reviewing").click()
    position = page.locator("[data-queue-position]")
    expect(position).to_contain_text(re.compile(r"Item 1 of \d+"))
    total = int(re.search(r"of (\d+)", position.inner_text()).group(1))
    assert total >= 3
    rows = page.locator(".review-row")
    # The keyboard is the page's deferred script's: it focuses the current row once it has run.
    # Keys pressed before that are the browser's (a busy machine showed two lost that way).
    expect(page.locator(".review-row.current")).to_be_focused()
    count = rows.count()
    for _ in range(count):
        page.keyboard.press("p")
    expect(page.locator("[data-labelled]")).to_have_text(str(count))
    first = page.url
    page.keyboard.press("n")
    page.wait_for_url(lambda url: url != first)
    expect(position).to_contain_text(f"Item 2 of {total}")
    page.keyboard.press("s")
    expect(position).to_contain_text(f"Item 3 of {total}")


def test_a_new_tokens_copy_buttons_fill_the_clipboard(page, owner, dataset, live_server):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    log_in(page, owner.username)
    page.goto(reverse("account"))
    form = page.locator("#token-form")
    form.get_by_label("Name").fill("my script")
    form.get_by_role("button", name="Make token").click()
    key = page.locator("#token-key").input_value()
    request = page.locator("#token-request")
    expect(request).to_have_text(
        f'curl -H "Authorization: Token {key}" {live_server.url}/api/datasets/'
    )
    page.get_by_role("button", name="Copy key").click()
    expect(page.locator("[data-copied]")).to_have_text("Copied: key.")
    assert page.evaluate("navigator.clipboard.readText()") == key
    page.get_by_role("button", name="Copy request").click()
    expect(page.locator("[data-copied]")).to_have_text("Copied: request.")
    assert page.evaluate("navigator.clipboard.readText()") == request.inner_text()
    page.locator("#new-key").scroll_into_view_if_needed()
    snap(page, "account-new-token")
    assert serious_violations(page) == []


def test_the_run_form_says_a_missing_key_at_the_estimate_and_start_waits(
    page, owner, dataset, monkeypatch
):
    from evaluation.judges.models import Judge
    from tests.factories import PanelFactory
    from tests.support.builders import checklisted_query

    checklisted_query(dataset, criteria=2, answers=1)
    variable = "JUDGE_KEY_FIRST_DAY_BROWSER"
    monkeypatch.delenv(variable, raising=False)
    judge = Judge.objects.create(
        name="Keyed", base_url="http://127.0.0.1:9/v1", model="m", api_key_env=variable
    )
    PanelFactory(name="Keyed panel", judges=[judge])
    log_in(page, owner.username)
    page.goto(reverse("dataset-runs", args=[dataset.pk]))
    start = page.get_by_role("button", name="Start run")
    expect(start).to_be_enabled()
    page.locator("#run-form").get_by_label("Panel").select_option(label="Keyed panel")
    estimate = page.locator("#run-estimate")
    expect(estimate.locator("[data-estimate-refused]")).to_contain_text(
        f"its API key variable {variable} is not set on this server"
    )
    expect(estimate.locator("[data-estimate-calls]")).to_have_count(0)
    expect(start).to_be_disabled()
    assert serious_violations(page) == []
