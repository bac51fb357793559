"""The Rewards page's ready-made request works when copied (issue 40): on the demo data, as
`dev.py run` loads it, the curl command and the Python code read from the page, run with a
rewards token made for the test, answer 200 with a reward from the demo's offline panel,
and the query they name has its external id fixed from then on."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from accounts.models import ApiToken
from accounts.services.tokens import api_token_create
from annotation import roles, services
from annotation.models import Query
from evaluation.demo.loader import load_demo
from evaluation.rewards.models import RewardBatch
from tests.browser.conftest import log_in
from tests.browser.test_accessibility import serious_violations

pytestmark = pytest.mark.browser


@pytest.fixture
def demo(db, owner):
    dataset = load_demo()
    services.dataset_set_role(dataset=dataset, user=owner, role=roles.DatasetRole.ADMIN)
    return dataset


def rewards_token(owner, demo) -> str:
    _, key = api_token_create(
        user=owner, name="trainer", scope=ApiToken.Scope.REWARDS, datasets=[demo],
        expires_at=timezone.now() + dt.timedelta(days=1),
    )  # fmt: skip
    return key


def run(command: list[str], key: str) -> dict:
    """The copied text run as a user would, with the token in CWB_TOKEN; its JSON answer."""
    env = {**os.environ, "CWB_TOKEN": key}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (done.stdout, done.stderr)  # curl --fail-with-body: a 4xx fails
    return json.loads(done.stdout)


def test_the_rewards_pages_request_answers_200_on_the_demo_when_copied(page, owner, demo):
    key = rewards_token(owner, demo)
    log_in(page, owner.username)
    page.goto(f"/datasets/{demo.pk}/rewards/")
    expect(page.get_by_role("heading", name="Try a request")).to_be_visible()
    curl = page.locator("#reward-curl").inner_text()
    python = page.locator("#reward-python").inner_text()
    # The request names this dataset, a real query by its external id, and the offline panel.
    query_id = json.loads(python.split("body = ", 1)[1].split("\nrequest =", 1)[0])["items"][0][
        "query"
    ]
    query = Query.objects.get(dataset=demo, external_id=query_id)
    assert f'"dataset": {demo.pk}' in curl and f'"query": "{query_id}"' in curl
    assert "$CWB_TOKEN" in curl and 'os.environ["CWB_TOKEN"]' in python
    expect(page.locator("#request")).to_contain_text("Offline checks")
    assert query.external_id_fixed_by == ""
    assert serious_violations(page) == []

    answered = run(["bash", "-c", curl], key)
    assert answered["batch"] and len(answered["items"]) == 1
    assert answered["items"][0]["failed"] is False
    answered = run([sys.executable, "-c", python], key)
    assert len(answered["items"]) == 1 and answered["items"][0]["criteria"]

    batches = RewardBatch.objects.filter(dataset=demo)
    assert batches.count() == 2 and {b.token_id for b in batches} == {
        ApiToken.objects.get(name="trainer").pk
    }
    query.refresh_from_db()
    assert query.external_id_fixed_by == "rewards"  # a trainer holds the id now

    # The copy button puts the same text on the clipboard.
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.get_by_role("button", name="Copy the Python code").click()
    expect(page.locator("[data-copied]")).to_have_text("Copied: the Python code.")
    assert page.evaluate("navigator.clipboard.readText()") == python


def test_a_rewards_page_without_a_scorable_query_says_why(page, owner, dataset):
    log_in(page, owner.username)
    page.goto(f"/datasets/{dataset.pk}/rewards/")
    expect(page.locator("#request")).to_contain_text(
        "No query of this dataset has a submitted checklist with criteria yet."
    )
    expect(page.locator("#reward-curl")).to_have_count(0)
