"""Issue 40's must-show for answers: an agent's answer posted through `POST /api/answers/`
(turns with a tool call, retrieved context) is found by searching the dataset's Answers
page and opened; its tool calls and context show on the answer page, the run's answer page
and the review page, and the run's verdicts on the answer page as on the run's answer page;
a penalty the answer avoided reads "avoided" on every verdict page,
never a red "fail"; axe-core finds nothing serious on any of them. With UPDATE_SCREENSHOTS=1
the screenshots land in docs/user-guide/img/."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from accounts.models import ApiToken
from accounts.services.tokens import api_token_create
from evaluation.runs import lifecycle
from evaluation.runs import services as runs
from tests.browser.conftest import log_in
from tests.browser.test_accessibility import serious_violations
from tests.browser.test_api_tokens import call
from tests.browser.test_checklist_editor import snap
from tests.factories import PanelFactory, offline_judge
from tests.support.builders import checklisted_query

pytestmark = pytest.mark.browser

TURNS = [
    {"role": "user", "content": "How did Q3 revenue compare with guidance?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "name": "search_filings", "arguments": {"ticker": "SLVX", "form": "10-Q"}}]},
    {"role": "tool", "tool_call_id": "c1", "name": "search_filings", "content": "Q3: $4.12B"},
    {"role": "assistant", "content": "Revenue was $4.12 billion, above guidance."},
]  # fmt: skip
CONTEXT = [{"id": "doc-1", "title": "Solavex Q3 10-Q", "source": "SEC", "text": "Revenue $4.12B."}]


def test_an_answer_posted_through_the_api_is_found_opened_and_read_everywhere(
    page, live_server, reviewed_dataset, reviewer, owner
):
    made = checklisted_query(
        reviewed_dataset, criteria=["States the Q3 revenue.", "Invents a figure."], answers=2
    )
    penalty = made.criteria[1]
    penalty.weight = -2
    penalty.save()
    _, key = api_token_create(user=owner, name="agent", scope=ApiToken.Scope.WRITE)
    status, posted = call(
        f"{live_server.url}/api/answers/", key, method="POST",
        body={"query": made.query.pk, "system": "Solavex agent", "text": "Revenue was "
              "$4.12 billion (quokkaberry check).", "turns": TURNS, "context": CONTEXT,
              "run_label": "nightly-2026-11-29"},
    )  # fmt: skip
    assert status == 201, posted
    answer_id = posted["id"]
    panel = PanelFactory(judges=[offline_judge()])
    run = runs.run_start(run=runs.run_create(dataset=reviewed_dataset, panel=panel, by=owner))
    lifecycle.run_task(
        worker="t", run_id=run.pk, answer_id=answer_id, judge_id=panel.judges.get().pk
    )
    run.verdicts.filter(answer_id=answer_id, criterion=penalty).update(outcome="fail")

    log_in(page, reviewer.username)
    page.goto(f"/datasets/{reviewed_dataset.pk}/answers/")
    expect(page.locator("tr[data-answer]")).to_have_count(3)
    assert serious_violations(page) == []
    page.get_by_label("Search the text").fill("QUOKKABERRY")
    page.get_by_role("button", name="Find").click()
    rows = page.locator("tr[data-answer]")
    expect(rows).to_have_count(1)
    expect(rows.first.locator("[data-has-tool-calls]")).to_be_visible()
    expect(rows.first.locator("[data-has-context]")).to_be_visible()
    # The run label is typed (a label a night), the latest labels offered beside it.
    run_label = page.get_by_label("Run label")
    expect(run_label).to_have_attribute("list", "run-labels")
    expect(page.locator("#run-labels option[value='nightly-2026-11-29']")).to_have_count(1)
    run_label.fill("nightly-2026-11-28")
    page.get_by_role("button", name="Find").click()
    expect(page.locator("[data-empty]")).to_contain_text("No answer matches these filters")
    page.get_by_label("Run label").fill("nightly-2026-11-29")
    page.get_by_role("button", name="Find").click()
    expect(rows).to_have_count(1)
    expect(page.get_by_label("Search the text")).to_have_value("QUOKKABERRY")
    assert serious_violations(page) == []
    snap(page, "answers-list")

    rows.first.get_by_role("link", name=f"Answer {answer_id}").click()
    expect(page).to_have_url(f"{live_server.url}/answers/{answer_id}/")
    expect_trajectory(page)
    expect(page.locator(f"[data-run-score='{run.pk}']")).to_be_visible()
    # The run's verdicts, criterion by criterion, on the answer's own page too.
    expect(page.locator(f"[data-verdicts-of='{run.pk}']")).to_be_visible()
    expect_avoided(page, penalty.text)
    assert serious_violations(page) == []
    snap(page, "answer-page")

    page.get_by_role("link", name="This answer in the run").click()
    expect(page).to_have_url(f"{live_server.url}/runs/{run.pk}/answers/{answer_id}/")
    expect_trajectory(page)
    expect_avoided(page, penalty.text)
    assert serious_violations(page) == []
    page.locator(".verdict-row").filter(has_text=penalty.text).scroll_into_view_if_needed()
    snap(page, "run-answer-penalty")

    page.get_by_role("link", name="Review this answer").click()
    expect(page.get_by_role("heading", name="Review: Solavex agent", exact=False)).to_be_visible()
    expect_trajectory(page)
    expect_avoided(page, penalty.text)
    assert serious_violations(page) == []


def expect_trajectory(page) -> None:
    timeline = page.locator("[data-timeline]")
    expect(timeline.locator(".tool-call code")).to_have_text("search_filings")
    expect(timeline.locator("pre.arguments")).to_contain_text('"form": "10-Q"')
    expect(timeline.get_by_text("Retrieved context")).to_be_visible()
    expect(timeline.locator(".passages summary")).to_contain_text("Solavex Q3 10-Q")


def expect_avoided(page, text: str) -> None:
    row = page.locator(".verdict-row").filter(has_text=text)
    head = row.locator(".verdict-head").first
    expect(head.locator(".badge.verdict-pass").first).to_have_text("avoided")
    expect(head.locator(".badge.verdict-fail")).to_have_count(0)
