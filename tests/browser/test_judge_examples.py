"""Worked examples picked from adjudications in a real browser (issue 25, point 2): an admin
goes from the judge page to its examples, chooses the dataset, has a balanced choice ticked,
unticks one, saves, and the judge page shows the new prompt version; axe-core clean on the
examples page before and after the pick."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from evaluation.judging import tuned
from evaluation.models import Judge
from tests.browser.conftest import log_in
from tests.browser.test_accessibility import serious_violations
from tests.evaluation.judges.test_examples import adjudicated  # noqa: F401 (a fixture)

pytestmark = pytest.mark.browser


def test_an_admin_picks_examples_from_adjudications(page, owner, reviewed_dataset, adjudicated):  # noqa: F811
    judge = Judge.objects.create(
        name="Tuned judge", base_url="http://127.0.0.1:9/v1", model="m", api_key_env=""
    )
    log_in(page, owner.username)
    page.goto(f"/judges/{judge.pk}/")
    expect(page.locator("[data-tuning]")).to_contain_text("verdict-v1")
    page.get_by_role("link", name="Pick examples from adjudications").click()
    page.get_by_role("link", name=reviewed_dataset.name).click()
    expect(page.locator("tr[data-adjudication]")).to_have_count(len(adjudicated))
    assert serious_violations(page) == []

    page.get_by_role("button", name="Tick a balanced choice").click()
    ticked = page.locator("tr[data-adjudication] input[type=checkbox]:checked")
    expect(ticked.first).to_be_visible()
    count = ticked.count()
    assert count >= 2
    judge.refresh_from_db()
    assert judge.examples == []  # ticked for review, not saved
    assert serious_violations(page) == []

    # One unticked by hand before saving: the saved examples are what is ticked.
    dropped = ticked.first.get_attribute("value")
    ticked.first.uncheck()
    page.get_by_role("button", name="Save the ticked examples").click()
    judge.refresh_from_db()
    saved = [e["source"]["adjudication"] for e in judge.examples]
    assert len(saved) == count - 1 and int(dropped) not in saved
    version = tuned.version("verdict-v1", "", judge.examples)
    assert version != "verdict-v1"

    page.goto(f"/judges/{judge.pk}/")
    expect(page.locator("[data-tuning]")).to_contain_text(version)
