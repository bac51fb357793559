"""The judge canary in the browser (issue 43, point 1): an admin turns the canary on for a
schedule; a run whose canary named a changed judge shows "judge changed?" and each judge's
agreement over the dataset's canaries as a chart whose points lead to the runs they checked.
The canary's measurement itself, on a real worker with a scripted judge, is
tests/evaluation/alerts/test_judge_canary.py; here its kept results are written directly."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from evaluation.runs.models import Run
from evaluation.schedules.models import RunSchedule
from tests.browser.conftest import log_in
from tests.factories import PanelFactory, offline_judge
from tests.support.builders import checklisted_query

pytestmark = pytest.mark.browser


def figure(agree: int, n: int, low: float, high: float) -> dict:
    return {"n": n, "agree": agree, "rate": agree / n, "low": low, "high": high, "kappa": None}


def test_the_canary_is_set_on_a_schedule_and_charted_on_the_run_page(page, owner, dataset):
    (answer,) = checklisted_query(dataset, criteria=2, answers=1).answers
    panel = PanelFactory(name="Night panel", judges=[offline_judge("Offline checks")])
    log_in(page, owner.username)
    page.goto(f"/datasets/{dataset.pk}/schedules/")
    form = page.locator("#schedule-form")
    form.get_by_label("Name").fill("Nightly")
    form.get_by_label("System").select_option(str(answer.system_id))
    form.get_by_label("Panel").select_option(label="Night panel")
    form.get_by_label("Time").fill("02:30")
    form.get_by_label("Judge canary").check()
    form.get_by_role("button", name="Add schedule").click()
    expect(page.locator("#schedules")).to_contain_text("02:30, every day")
    assert RunSchedule.objects.get(dataset=dataset, name="Nightly").canary

    # Three nights: the judges agreed with the experts, then one of them stopped agreeing.
    nights = [
        {"Judge A": figure(19, 20, 0.76, 0.99), "Judge B": figure(18, 20, 0.70, 0.97)},
        {"Judge A": figure(20, 20, 0.84, 1.0), "Judge B": figure(18, 20, 0.70, 0.97)},
        {"Judge A": figure(6, 20, 0.15, 0.52), "Judge B": figure(19, 20, 0.76, 0.99)},
    ]
    runs, previous = [], None
    for n, judges in enumerate(nights):
        finished = timezone.now() - dt.timedelta(days=len(nights) - n)
        run = Run.objects.create(dataset=dataset, panel=panel, name=f"Nightly {n}",
                                 status=Run.Status.DONE, finished_at=finished)  # fmt: skip
        changed = ["Judge A"] if n == 2 else []
        result = {"judges": judges, "panel": judges["Judge A"], "changed": changed,
                  "previous": previous and previous.pk,
                  "previous_judges": previous and previous.canary_result["judges"]}  # fmt: skip
        previous = Run.objects.create(
            dataset=dataset, panel=panel, name=f"Nightly {n} · canary", status=Run.Status.DONE,
            scope=Run.Scope.LABELLED, canary_for=run, finished_at=finished, canary_result=result,
        )  # fmt: skip
        runs.append(run)

    page.goto(f"/runs/{runs[-1].pk}/")
    section = page.locator("#judge-canary")
    expect(section.locator("h3")).to_contain_text("judge changed?")
    expect(section.get_by_role("alert")).to_contain_text("Judge A agreed with the human labels")
    expect(section.locator('[data-canary-judge="Judge A"]')).to_contain_text("changed?")
    expect(section.locator('[data-canary-judge="Judge B"]')).not_to_contain_text("changed?")
    chart = section.locator("#canary-chart svg")
    expect(chart.locator("polyline")).to_have_count(2)  # one line per judge
    expect(chart.locator("a.point")).to_have_count(6)  # three canaries each
    expect(chart.locator("a.point title").nth(2)).to_contain_text("judge changed?")
    # A point of the first night leads to the run that canary checked (Judge B's line is
    # drawn last, on top).
    chart.locator('[data-series="Judge B"] a.point').first.click()
    expect(page).to_have_url(f"{page.url.split('/runs/')[0]}/runs/{runs[0].pk}/")
    expect(page.locator("#judge-canary")).not_to_contain_text("judge changed?")


def test_the_analytics_page_charts_the_canary_of_the_runs_panel(page, owner, dataset):
    checklisted_query(dataset, criteria=2, answers=1)
    panel = PanelFactory(name="Night panel", judges=[offline_judge("Offline checks")])
    runs, previous = [], None
    for n, rate in enumerate((0.95, 0.3)):
        judges = {"Judge A": figure(round(rate * 20), 20, rate - 0.2, min(rate + 0.04, 1.0))}
        run = Run.objects.create(dataset=dataset, panel=panel, name=f"Nightly {n}",
                                 status=Run.Status.DONE, finished_at=timezone.now())  # fmt: skip
        result = {"judges": judges, "panel": judges["Judge A"],
                  "changed": ["Judge A"] if n else [], "previous": previous and previous.pk,
                  "previous_judges": previous and previous.canary_result["judges"]}  # fmt: skip
        previous = Run.objects.create(
            dataset=dataset, panel=panel, name=f"Nightly {n} · canary", status=Run.Status.DONE,
            scope=Run.Scope.LABELLED, canary_for=run, finished_at=timezone.now(),
            canary_result=result,
        )  # fmt: skip
        runs.append(run)
    log_in(page, owner.username)
    page.goto(f"/datasets/{dataset.pk}/analytics/?run={runs[-1].pk}")
    chart = page.locator("#analytics-canary-chart svg")
    expect(chart.locator("polyline")).to_have_count(1)
    expect(chart.locator("a.point")).to_have_count(2)
    expect(page.locator("#judge-canary + p")).to_contain_text("judge changed? Judge A")
