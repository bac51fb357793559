"""A person in a real browser: log in, find their dataset, filter queries, see health."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.conf import settings
from django.core.management import call_command
from playwright.sync_api import expect

from evaluation.demo import data as demo_data
from tests.browser.conftest import log_in
from tests.browser.test_checklist_editor import snap
from tests.factories import QueryFactory
from tests.support.beat import beat_seen

pytestmark = pytest.mark.browser


def test_demo_admin_logs_in_and_sees_the_demo_dataset(page, transactional_db):
    call_command("demo")
    log_in(page, settings.DEMO_ADMIN_USERNAME, settings.DEMO_PASSWORD)
    expect(page.get_by_role("link", name="Finance demo")).to_be_visible()
    page.get_by_role("link", name="Finance demo").click()
    expect(page.get_by_role("heading", name="Finance demo")).to_be_visible()
    expect(page.locator("#query-table tbody tr")).to_have_count(len(demo_data.QUERIES))
    snap(page, "dataset-queries")


def test_query_search_filters_the_table_live_without_reloading(page, owner, dataset):
    QueryFactory(dataset=dataset, text="Northwind revenue in Q3")
    QueryFactory(dataset=dataset, text="Harbor operating margin")
    log_in(page, owner.username)
    page.goto(f"/datasets/{dataset.pk}/")
    page.evaluate("window.__sentinel = 'same page'")  # lost if the page reloads
    page.get_by_label("Search").fill("Harbor")
    expect(page.locator("#query-table tbody tr")).to_have_count(1)
    expect(page.locator("#query-table")).to_contain_text("Harbor operating margin")
    assert page.evaluate("window.__sentinel") == "same page"
    expect(page).to_have_url(re.compile(r"q=Harbor"))


def test_outsider_sees_not_found_for_someone_elses_dataset(page, outsider, dataset):
    log_in(page, outsider.username)
    expect(page.get_by_text("You have no datasets yet")).to_be_visible()
    response = page.goto(f"/datasets/{dataset.pk}/")
    assert response.status == 404
    expect(page.get_by_role("heading", name="Not found")).to_be_visible()


def test_wrong_password_shows_an_error(page, owner):
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(owner.username)
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_contain_text("correct username and password")


def test_health_page_is_green_with_a_live_worker(page, celery_worker, admin_user):
    beat_seen(dt.timedelta(seconds=20))  # as celery beat leaves its heartbeat
    log_in(page, admin_user.username, "password")  # the checks' detail is for staff
    page.goto("/healthz")
    expect(page.get_by_role("heading", name=re.compile("Health"))).to_contain_text("all green")
    expect(page.locator("tbody tr")).to_have_count(4)
    expect(page.locator("tbody")).not_to_contain_text("fail")
