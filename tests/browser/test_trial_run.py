"""A trial run compared side by side with the current judge, in a real browser (issue 25):
a dataset admin starts a trial of a candidate judge from the run form (scope "labelled"),
sees its cost before starting, a real worker grades the labelled items on the loopback
judge, the comparison shows both columns, McNemar's p-value and the changed items, and
"Use this judge" puts the candidate in the current panel; axe-core clean."""

from __future__ import annotations

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from evaluation.judges.models import Judge
from evaluation.runs.models import Run
from loopback.scripts import verdict_responder
from tests.browser.conftest import log_in
from tests.browser.test_accessibility import serious_violations
from tests.browser.test_checklist_editor import snap
from tests.evaluation.trials.conftest import TRIAL_CRITERIA
from tests.factories import PanelFactory
from tests.support.builders import checklisted_query, finished_run, human_label

pytestmark = pytest.mark.browser

# criterion -> the human label on each of the three answers, and the current judge's votes
HUMANS = {
    0: (["pass", "pass", "pass"], ["fail", "fail", "fail"]),
    1: (["fail", "fail", "fail"], ["fail", "fail", "fail"]),
    2: (["pass", "fail", "fail"], ["pass", "pass", "pass"]),
}


def candidate_says(request) -> str:
    """The candidate passes the revenue criterion and fails the others."""
    return "pass" if "revenue" in request.last_user_text.rsplit("Criterion:", 1)[-1] else "fail"


def test_a_trial_is_compared_with_the_current_judge_and_adopted(
    page, celery_worker, loopback_openai, owner, dataset
):
    made = checklisted_query(dataset, criteria=TRIAL_CRITERIA, answers=3)
    votes = {}
    for c, (humans, current) in HUMANS.items():
        for a, answer in enumerate(made.answers):
            human_label(answer, made.criteria[c], "ann", humans[a])
            votes[(answer, made.criteria[c])] = [current[a]]
    production = PanelFactory(
        name="Production panel", judges=[Judge.objects.create(name="Current", kind="external")]
    )
    baseline = finished_run(dataset, production, votes)
    loopback_openai.responder = verdict_responder(candidate_says, failure_kind="missing")
    candidate = Judge.objects.create(
        name="Candidate", base_url=loopback_openai.base_url, model="candidate", timeout=5,
        prompt_price="1.0", completion_price="4.0",
    )  # fmt: skip
    PanelFactory(name="Candidate panel", judges=[candidate])

    log_in(page, owner.username)
    page.goto(reverse("dataset-runs", args=[dataset.pk]))
    form = page.locator("#run-form")
    form.get_by_label("Panel").select_option(label="Candidate panel")
    form.get_by_label("Only items with human labels or adjudications (a trial)").check()
    # The cost before spending: nine labelled items, one call each.
    expect(page.locator("[data-estimate-calls]")).to_have_text("9")
    expect(page.locator("[data-estimate-cost]")).to_contain_text("cost about")
    snap(page, "trial-run-form")
    assert serious_violations(page) == []
    form.get_by_role("button", name="Start run").click()

    expect(page.locator("[data-trial]")).to_contain_text("only the items with a human label")
    expect(page.locator("[data-status]")).to_have_attribute("data-status", "done", timeout=60_000)
    trial = Run.objects.get(scope=Run.Scope.LABELLED)
    assert trial.baseline == baseline and loopback_openai.call_count == 9
    expect(page.locator("[data-calls]")).to_contain_text("9 / 9 calls")

    page.get_by_role("link", name="Compare it with the current judge").click()
    sides = page.locator("[data-sides]")
    expect(sides.locator("[data-side=baseline]")).to_contain_text("Current judge")
    expect(sides.locator("[data-side=trial]")).to_contain_text("Candidate")
    expect(sides.locator("[data-agreement]").nth(0)).to_contain_text("4 / 9")
    expect(sides.locator("[data-agreement]").nth(1)).to_contain_text("8 / 9")
    # b = 1, c = 5: the exact test, p = 2 · (1 + 6) / 2⁶ = 0.21875
    expect(page.locator("[data-p-value]")).to_have_text("0.2188")
    expect(page.locator("[data-changed] tbody tr")).to_have_count(6)
    link = page.locator("[data-changed] tbody tr").first.get_by_role("link", name="Review answer")
    expect(link).to_have_attribute(
        "href",
        f"/answers/{made.answers[0].pk}/review/?run={trial.pk}&criterion={made.criteria[0].pk}",
    )
    assert serious_violations(page) == []
    page.set_viewport_size({"width": 1280, "height": 1400})
    snap(page, "trial-comparison")

    page.get_by_role("button", name="Use this judge").click()
    expect(page.locator(".message.success")).to_contain_text("now uses the trial's judges")
    page.goto(reverse("panel-list"))
    expect(page.locator(f"[data-panel='{production.pk}']")).to_contain_text("Candidate ×1")
    expect(page.locator(f"[data-panel='{production.pk}']")).not_to_contain_text("Current")
