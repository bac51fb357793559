"""axe-core over every main page as each role (issue 15): the admin, an expert and a
reviewer open the pages their role offers, on the demo dataset with a finished run, human
labels and an adjudication, and axe-core (bundled in axe-playwright-python, so nothing is
fetched) finds no serious or critical violation. Then the review page is worked with Tab,
Enter and the keys alone."""

from __future__ import annotations

import time

import pytest
from django.conf import settings
from django.urls import reverse
from playwright.sync_api import expect

from annotation.models import Checklist
from evaluation.answers.models import Answer
from evaluation.demo.loader import load_demo
from evaluation.judges.models import Judge, Panel
from evaluation.labels.models import Adjudication, HumanLabel
from tests.browser.conftest import log_in
from tests.factories import PanelFactory, external_judges
from tests.support.builders import finished_run

pytestmark = pytest.mark.browser
SERIOUS = {"serious", "critical"}


@pytest.fixture
def demo(db):
    """The demo dataset, a finished run whose judges split on some criteria, a reviewer's
    labels on the first answer and an adjudication."""
    dataset = load_demo()
    answers = list(
        Answer.objects.filter(query__dataset=dataset, checklist__isnull=True).order_by("pk")[:4]
    )
    votes = {}
    patterns = [("pass", "pass", "fail"), ("fail", "fail", "fail"), ("pass", "pass", "pass")]
    for answer in answers:
        criteria = [
            c
            for checklist in answer.query.checklists.filter(status=Checklist.Status.SUBMITTED)
            for c in checklist.criteria.order_by("position")
        ]
        for n, criterion in enumerate(criteria):
            votes[answer, criterion] = patterns[n % 3]
    run = finished_run(dataset, PanelFactory(judges=external_judges(3)), votes)
    first = answers[0]
    labelled = [c for (a, c) in votes if a == first]
    for n, criterion in enumerate(labelled[:4]):
        HumanLabel.objects.create(
            answer=first, criterion=criterion, rater="rita",
            label="fail" if n % 2 else "pass",
        )  # fmt: skip
    Adjudication.objects.create(answer=first, criterion=labelled[0], label="pass")
    return dataset, run, first, labelled


def main_pages(dataset, run, answer, criterion) -> dict[str, list[str]]:
    d = dataset.pk
    query = answer.query
    checklist = Checklist.objects.filter(query=query, author__username="alice").first()
    panel = Panel.objects.order_by("pk").first()
    shared = [
        reverse("home"),
        reverse("dataset-detail", args=[d]),
        reverse("query-detail", args=[query.pk]),
    ]
    review = [
        reverse("review-queue", args=[d]) + "?queue=labelling",
        reverse("review-queue", args=[d]) + "?queue=disagreement",
        reverse("answer-review", args=[answer.pk])
        + f"?queue=disagreement&criterion={criterion.pk}",
        reverse("dataset-agreement", args=[d]),
        reverse("agreement-items", args=[d]) + "?figure=panel",
        reverse("dataset-runs", args=[d]),
        reverse("run-detail", args=[run.pk]),
        reverse("run-answer", args=[run.pk, answer.pk]),
        reverse("verdict-prompt-page", args=[run.verdicts.order_by("pk").first().pk]),
        reverse("dataset-analytics", args=[d]),
        # Issue 41: the compare page shows each side's undecided criteria.
        reverse("analytics-compare", args=[d]) + f"?a={run.pk}&b={run.pk}",
        reverse("dataset-cross-evaluation", args=[d]),
        reverse("dataset-answers", args=[d]),
        reverse("dataset-answers", args=[d]) + "?q=a&labelled=no&sort=longest",
        reverse("answer-detail", args=[answer.pk]),
    ]
    return {
        "rita": shared + review,
        "alice": [
            *shared,
            reverse("checklist-detail", args=[checklist.pk]),
            # Issue 41: a criterion's check page (scoring and tokenizer in its parameters).
            reverse("criterion-check", args=[checklist.criteria.order_by("pk").first().pk]),
            reverse("perfect-answer", args=[checklist.pk]),
        ],
        "admin": [
            *shared,
            *review,
            reverse("dataset-edit", args=[d]),
            reverse("dataset-members", args=[d]),
            reverse("dataset-progress", args=[d]),
            reverse("dataset-export", args=[d]),
            reverse("dataset-rewards", args=[d]),
            reverse("dataset-import"),
            reverse("query-create", args=[d]),
            reverse("judge-list"),
            reverse("judge-create"),
            reverse("panel-list"),
            reverse("panel-create"),
            reverse("panel-edit", args=[panel.pk]),
            reverse("guideline-list"),
            reverse("guideline-create"),
            reverse("perfect-answer", args=[checklist.pk]),
            # Issue 40: the pages its first-day fixes touch.
            reverse("dataset-schedules", args=[d]),
            reverse("dataset-tuning", args=[d]),
            # One judge of each kind (the demo has LLM and no-LLM ones).
            *[reverse("judge-edit", args=[pk]) for pk in
              {j.kind: j.pk for j in Judge.objects.order_by("-pk")}.values()],
            reverse("account"),
        ],
    }  # fmt: skip


SETTLED = """() => !document.querySelector('.htmx-request') && !document.getAnimations()
    .some(a => a instanceof CSSTransition && a.playState === 'running')"""


def serious_violations(page) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe

    # An element whose htmx request is in flight is dimmed (.htmx-request, static/css/app.css)
    # and fades back: measured then, its contrast is not the page's. Wait for both to end,
    # asking from here: wait_for_function's in-page poller evaluates a string, which the
    # pages' Content-Security-Policy (no 'unsafe-eval') refuses; evaluate is not page script.
    deadline = time.monotonic() + 15
    while not page.evaluate(SETTLED):
        assert time.monotonic() < deadline, "an htmx request was still in flight after 15 s"
        page.wait_for_timeout(50)
    results = Axe().run(page)
    found = []
    for violation in results.response["violations"]:
        if violation.get("impact") in SERIOUS:
            targets = [", ".join(map(str, node["target"])) for node in violation["nodes"][:4]]
            found.append(f"{violation['id']} ({violation['impact']}): {targets}")
    return found


def test_every_main_page_is_axe_clean_for_each_role(page, demo):
    dataset, run, answer, labelled = demo
    pages = main_pages(dataset, run, answer, labelled[0])
    problems: dict[str, list[str]] = {}
    for username, urls in pages.items():
        page.context.clear_cookies()
        log_in(page, username, settings.DEMO_PASSWORD)
        for url in urls:
            response = page.goto(url)
            assert response is not None and response.status == 200, (username, url)
            page.wait_for_load_state("networkidle")
            found = serious_violations(page)
            if found:
                problems[f"{username} {url}"] = found
    assert not problems, "\n".join(f"{where}: {found}" for where, found in problems.items())
    # The login page too, signed out.
    page.context.clear_cookies()
    page.goto("/accounts/login/")
    assert serious_violations(page) == []


def test_review_page_works_from_tab_and_enter_alone(page, demo):
    _dataset, _run, answer, _labelled = demo
    log_in(page, "rita", settings.DEMO_PASSWORD)
    page.goto(reverse("answer-review", args=[answer.pk]) + "?queue=labelling")
    first = page.locator(".review-row").first
    expect(first).to_be_focused()
    # Tab from the row reaches its Pass button (no tabindex=-1), Enter presses it.
    pass_button = first.locator(".label-form button[value=pass]")
    for _ in range(20):
        page.keyboard.press("Tab")
        if pass_button.evaluate("b => b === document.activeElement"):
            break
    expect(pass_button).to_be_focused()
    swapped = "() => !document.querySelector('.review-row').dataset.old"
    page.evaluate("() => { document.querySelector('.review-row').dataset.old = '1'; }")
    page.keyboard.press("Enter")
    page.wait_for_function(swapped)  # the row came back from the server
    expect(
        page.locator(".review-row").first.locator(".label-form button[value=pass]")
    ).to_have_attribute("aria-pressed", "true")
    # Focus stays on the button in the swapped row, so Tab goes on to Fail.
    expect(
        page.locator(".review-row").first.locator(".label-form button[value=pass]")
    ).to_be_focused()
    page.keyboard.press("Tab")
    expect(
        page.locator(".review-row").first.locator(".label-form button[value=fail]")
    ).to_be_focused()
    page.evaluate("() => { document.querySelector('.review-row').dataset.old = '1'; }")
    page.keyboard.press("Space")
    page.wait_for_function(swapped)
    row = page.locator(".review-row").first
    expect(row.locator(".label-form button[value=fail]")).to_have_attribute("aria-pressed", "true")
    expect(row.locator(".label-form button[value=pass]")).to_have_attribute("aria-pressed", "false")
    assert (
        HumanLabel.objects.filter(
            answer=answer, criterion_id=int(row.get_attribute("data-criterion")), rater="rita"
        )
        .values_list("label", flat=True)
        .get()
        == "fail"
    )
