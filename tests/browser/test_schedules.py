"""A dataset admin sets a schedule in the browser and it fires under `dev.py run`'s
scheduler (issue 28, item 2): the page warns while no celery beat runs, stops warning once
beat (started with dev.py's arguments) beats, shows the next run to the minute, and the
run appears on the page once its minute comes, once. The page offers times of day only:
the schedule is moved to the coming minute, the short interval of this test."""

from __future__ import annotations

import time

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from evaluation.runs.models import Run
from evaluation.schedules import beat as scheduler
from tests.browser.conftest import log_in
from tests.factories import PanelFactory, offline_judge
from tests.support.beat import coming_minute, wait_for
from tests.support.builders import checklisted_query

pytestmark = pytest.mark.browser


def test_a_schedule_set_in_the_browser_fires_once(page, celery_worker, start_beat, owner, dataset):
    (answer,) = checklisted_query(dataset, criteria=2, answers=1).answers
    answer.run_label = "nightly-1"
    answer.save(update_fields=["run_label"])
    PanelFactory(name="Night panel", judges=[offline_judge("Offline checks")])
    log_in(page, owner.username)
    page.goto(f"/datasets/{dataset.pk}/schedules/")
    form = page.locator("#schedule-form")
    form.get_by_label("Name").fill("Nightly")
    form.get_by_label("System").select_option(str(answer.system_id))
    form.get_by_label("Panel").select_option(label="Night panel")
    form.get_by_label("Time").fill("02:30")
    form.get_by_role("button", name="Add schedule").click()
    expect(page.locator("#schedules")).to_contain_text("02:30, every day")
    warning = page.locator("#scheduler-warning")
    expect(warning).to_contain_text("These schedules will not fire")
    expect(warning).to_contain_text("celery -A config beat --loglevel INFO")

    beat = start_beat(env={"SCHEDULER_HEARTBEAT": "1"})
    wait_for(lambda: scheduler.state().seen, 30, lambda: "No heartbeat:\n" + beat.log())
    page.reload()
    expect(warning).to_have_count(0)

    at = coming_minute()
    page.get_by_role("link", name="Edit").click()
    page.locator("#schedule-form").get_by_label("Time").fill(f"{at:%H:%M}")
    page.get_by_role("button", name="Save").click()
    row = page.locator("#schedules tbody tr")
    expect(row).to_contain_text(f"{at:%H:%M}, every day")
    # The cells by their column's heading: a column added to the table moves the others.
    headings = page.locator("#schedules thead th").all_inner_texts()
    cell = {name: row.locator("td").nth(headings.index(name)) for name in headings if name}
    expect(cell["Next run"]).to_have_text(f"{at:%Y-%m-%d %H:%M}")

    def listed() -> bool:
        page.reload()
        return page.locator("#scheduled-runs li").count() > 0

    wait_for(
        listed,
        (at - timezone.now()).total_seconds() + 45,
        lambda: f"No run listed at {timezone.localtime():%H:%M:%S}:\n" + beat.log()[-3000:],
    )
    expect(page.locator("#scheduled-runs li")).to_contain_text("Nightly")
    time.sleep(max(0.0, (at - timezone.now()).total_seconds() + 12))
    page.reload()
    expect(page.locator("#scheduled-runs li")).to_have_count(1)
    assert Run.objects.filter(dataset=dataset).count() == 1
    expect(cell["Last run"]).to_have_text(f"{at:%Y-%m-%d %H:%M}")
