"""The run page of an ended run whose verdict counts are not kept (issue 44): it opens at
once saying they are being counted, stays axe-clean, polls, and reloads itself with the
exact counts once the refresh it queued has run (real Chromium, the page's own htmx)."""

from __future__ import annotations

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from evaluation.analytics.tasks import refresh_analytics
from evaluation.kept.models import KeptFigure
from evaluation.runs import overview
from evaluation.runs.models import Verdict
from tests.browser.conftest import log_in
from tests.browser.test_accessibility import serious_violations
from tests.evaluation.agreement.labelled import build_labelled

pytestmark = pytest.mark.browser


def test_the_run_page_says_counting_then_reloads_with_the_exact_counts(
    page, transactional_db, reviewed_dataset, owner, settings
):
    settings.FIGURES_COLD_IN_REQUEST = False  # production's rule
    run = build_labelled(reviewed_dataset, queries=2, criteria=3, systems=2, seed=101).run
    KeptFigure.objects.filter(run_id=run.pk).delete()
    log_in(page, owner.username)
    page.goto(reverse("run-detail", args=[run.pk]))
    counting = page.locator("[data-counting]")
    expect(counting).to_be_visible()
    assert serious_violations(page) == []

    # What the worker does with the refresh the page queued; the page's poll then reloads it.
    assert refresh_analytics(run.pk, overview.REFRESH_GROUP) is True
    done = Verdict.objects.filter(run=run).count()
    expect(page.locator("[data-done]")).to_have_text(str(done), timeout=15_000)
    expect(counting).to_have_count(0)
    assert serious_violations(page) == []
