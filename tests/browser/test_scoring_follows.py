"""Scoring that says what it does (issue 40): an admin changes the dataset's strategy on
the Settings page in one tab, and the run page open in another shows the new figures by
itself once they are computed, with no reload; the run page and the run's answer page
show each score's undecided criteria and what they counted as."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from annotation.models import Criterion
from tests.browser.conftest import log_in
from tests.browser.test_accessibility import serious_violations
from tests.factories import PanelFactory, external_judges
from tests.support.builders import checklisted_query, finished_run

pytestmark = pytest.mark.browser


def test_a_strategy_change_updates_the_open_run_page(page, owner, dataset, eager_refresh):
    made = checklisted_query(dataset, criteria=5, answers=1)
    answer = made.answers[0]
    penalty = made.criteria[3]
    Criterion.objects.filter(pk=penalty.pk).update(weight=Decimal("-1"))
    panel = PanelFactory(judges=external_judges(1))
    # Met, met, not met, the penalty committed, one undecided: share 2/4, points (2-1)/3.
    outcomes = ("pass", "pass", "fail", "pass", "unparseable")
    run = finished_run(
        dataset, panel, {(answer, c): (o,) for c, o in zip(made.criteria, outcomes, strict=True)}
    )
    log_in(page, owner.username)
    page.goto(reverse("run-detail", args=[run.pk]))
    row = page.locator(f'tr[data-answer="{answer.pk}"]')
    expect(row.locator("[data-value]")).to_have_text("50%")
    expect(page.locator("tr[data-system] [data-undecided]")).to_have_text("1")
    assert serious_violations(page) == []

    settings = page.context.new_page()
    settings.goto(reverse("dataset-edit", args=[dataset.pk]))
    settings.locator("#id_scoring").select_option("points")
    settings.get_by_role("button", name="Save").click()
    expect(settings.get_by_text("Settings saved.")).to_be_visible()
    settings.close()

    # The run page asks every few seconds; it reloads itself with the new figures.
    expect(row.locator("[data-value]")).to_have_text("33%", timeout=30_000)
    assert "points" in page.locator("main").inner_text()
    page.locator(f'tr[data-answer="{answer.pk}"] a').nth(1).click()
    expect(page.locator("[data-rubric-value]")).to_contain_text("1 undecided, left out")
