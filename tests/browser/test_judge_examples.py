"""Worked examples picked from adjudications in a real browser (issues 25 and 38): an admin of
dataset A goes from the dataset page to its judge tuning, has a balanced choice of A's
adjudications ticked, unticks one and saves; the tuning page shows the new prompt version.
Then an admin of dataset B, which uses the same judge, sees none of A's examples anywhere
(the judge's pages and API, B's tuning, B's run and its verdicts' prompts), and the prompts
B's run sent the judge carry none of them. axe-core clean on the examples page."""

from __future__ import annotations

import threading

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from playwright.sync_api import expect

from annotation import roles, services
from evaluation.judges import tuning
from evaluation.runs import lifecycle
from evaluation.runs import services as runs
from evaluation.runs.models import Verdict
from tests.browser.conftest import log_in
from tests.browser.test_accessibility import serious_violations
from tests.evaluation.judges.test_examples import adjudicated  # noqa: F401 (a fixture)
from tests.factories import AnswerFactory, PanelFactory, UserFactory, loopback_judges
from tests.support.builders import checklisted_query

pytestmark = pytest.mark.browser


def test_a_judge_tuned_on_one_dataset_shows_nothing_to_another(
    page,
    owner,
    reviewed_dataset,
    adjudicated,  # noqa: F811
    loopback_openai,
):
    (judge,) = loopback_judges(loopback_openai, 1)
    log_in(page, owner.username)
    page.goto(f"/datasets/{reviewed_dataset.pk}/")
    page.get_by_role("link", name="Judge tuning").click()
    page.get_by_role("link", name=judge.name).click()
    expect(page.locator("[data-tuning]")).to_contain_text("verdict-v1")
    page.get_by_role("link", name="Pick examples from this dataset's adjudications").click()
    expect(page.locator("tr[data-adjudication]")).to_have_count(len(adjudicated))
    assert serious_violations(page) == []

    page.get_by_role("button", name="Tick a balanced choice").click()
    ticked = page.locator("tr[data-adjudication] input[type=checkbox]:checked")
    expect(ticked.first).to_be_visible()
    count = ticked.count()
    assert count >= 2
    assert tuning.stored(judge, reviewed_dataset.pk) is None  # ticked for review, not saved
    assert serious_violations(page) == []

    # One unticked by hand before saving: the saved examples are what is ticked.
    dropped = ticked.first.get_attribute("value")
    ticked.first.uncheck()
    page.get_by_role("button", name="Save the ticked examples").click()
    expect(page.locator(".messages")).to_contain_text("saved")
    stored = tuning.stored(judge, reviewed_dataset.pk).examples
    saved = [e["source"]["adjudication"] for e in stored]
    assert len(saved) == count - 1 and int(dropped) not in saved
    version = tuning.version("verdict-v1", "", stored)
    page.goto(f"/datasets/{reviewed_dataset.pk}/tuning/{judge.pk}/")
    expect(page.locator("[data-tuning]")).to_contain_text(version)
    # What A's examples say, which B's admin must never meet.
    markers = {e["reason"] for e in stored} | {e["excerpt"][:60] for e in stored}
    markers |= {e["criterion"] for e in stored}

    # Dataset B: its own admin (a site admin too), its own query, the same judge.
    b_admin = UserFactory(username="b-admin")
    b_admin.groups.add(Group.objects.get(name=roles.Group.ADMIN.value))
    b = services.dataset_create(name="Dataset B", by=b_admin)
    made = checklisted_query(b, criteria=["Gives the B-only figure."], author=b_admin)
    answer = AnswerFactory(query=made.query, text="The B-only figure is 7.")
    before = loopback_openai.call_count
    run = runs.run_start(
        run=runs.run_create(dataset=b, panel=PanelFactory(judges=[judge]), by=b_admin)
    )
    _in_a_thread(
        lambda: lifecycle.run_task(
            worker="test", run_id=run.pk, answer_id=answer.pk, judge_id=judge.pk
        )
    )
    sent = [c.request.messages for c in loopback_openai.calls[before:]]
    assert sent and all("Worked examples" not in str(m) for m in sent)
    assert not any(marker in str(sent) for marker in markers)

    page.context.clear_cookies()
    log_in(page, b_admin.username)
    verdict = Verdict.objects.filter(run=run).first()
    for url in (
        f"/judges/{judge.pk}/", "/judges/", f"/api/judges/{judge.pk}/", "/api/judges/",
        f"/datasets/{b.pk}/tuning/", f"/datasets/{b.pk}/tuning/{judge.pk}/",
        f"/api/datasets/{b.pk}/tuning/{judge.pk}/", f"/runs/{run.pk}/",
        f"/runs/{run.pk}/answers/{answer.pk}/", f"/verdicts/{verdict.pk}/prompt/",
        f"/api/verdicts/{verdict.pk}/prompt/",
    ):  # fmt: skip
        response = page.goto(url)
        assert response.status == 200, url
        text = page.content()
        assert not [m for m in markers if m in text], url
    # A's own tuning pages are not B's admin's to open.
    assert page.goto(f"/datasets/{reviewed_dataset.pk}/tuning/{judge.pk}/").status == 404


def _in_a_thread(work) -> None:
    """Playwright's sync API keeps an event loop running in this thread, and the judge
    client runs one of its own: the run's task runs beside it, as a worker would."""
    failed: list[BaseException] = []

    def target() -> None:
        try:
            work()
        except BaseException as exc:  # re-raised in the test's thread
            failed.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(60)
    if failed:
        raise failed[0]
