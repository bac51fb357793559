"""The stability pass in the browser (issue 43, point 2): on a finished run's page an admin
picks the judge, k and the items, sees the pass's estimate redrawn as the form changes,
starts it, and the section follows it; a refused k is said naming the field. The page stays
free of serious accessibility violations. The pass's figures on a real worker with a
scripted judge: tests/evaluation/runs/test_stability_pass.py."""

from __future__ import annotations

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from evaluation.runs import snapshot
from evaluation.runs.models import Run, Verdict
from tests.browser.conftest import log_in
from tests.browser.test_accessibility import serious_violations
from tests.evaluation.runs.test_stability_pass import world


def finished(dataset, panel, judge, items) -> Run:
    """A run of the panel that ended with a pass on every item, written directly (the
    browser's event loop leaves no room for the judge client's here)."""
    run = Run.objects.create(dataset=dataset, panel=panel, status=Run.Status.DONE,
                             snapshot=snapshot.take(panel, dataset.pk),
                             finished_at=timezone.now())  # fmt: skip
    Verdict.objects.bulk_create(
        Verdict(
            run=run, answer_id=a, criterion_id=c, judge=judge, outcome="pass", cache_key=f"{a}-{c}"
        )
        for a, c in items
    )
    return run


pytestmark = pytest.mark.browser


def test_an_admin_starts_a_stability_pass_from_the_run_page(page, owner, dataset, loopback_openai):
    judge, panel, flips = world(dataset, loopback_openai)
    run = finished(dataset, panel, judge, flips)
    log_in(page, owner.username)
    page.goto(f"/runs/{run.pk}/")
    form = page.locator("#stability-pass-form")
    expect(form.get_by_label("Judge")).to_have_value(str(judge.pk))
    # The estimate follows the form: 200 items asked, the run has 30; k = 5 at first.
    estimate = page.locator("#stability-pass-estimate")
    expect(estimate.locator("[data-estimate-calls]")).to_have_text("150")
    form.get_by_label("k (calls per item)").fill("3")
    form.get_by_label("Items").fill("10")
    form.get_by_label("Items").dispatch_event("change")
    expect(estimate.locator("[data-estimate-calls]")).to_have_text("30")
    assert serious_violations(page) == []

    form.get_by_label("k (calls per item)").fill("3")
    form.get_by_role("button", name="Start the stability pass").click()
    expect(page.locator("[data-stability-pass]")).to_be_visible()
    made = Run.objects.get(stability_for=run)
    assert made.expected == 30
    expect(page.locator("#stability-pass")).to_contain_text("/ 30 verdicts")
    assert serious_violations(page) == []
