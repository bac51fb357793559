"""A reviewer reads an agent's answer: the timeline shows the turns, the tool calls with their
arguments, the folded tool results and context, which trajectory check failed and why, and a
search that narrows it; hostile text in a tool result stays text; axe-core finds nothing
serious."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from evaluation.checks.models import CriterionCheck
from evaluation.runs import lifecycle
from evaluation.runs import services as runs
from tests.browser.conftest import log_in
from tests.browser.test_accessibility import serious_violations
from tests.factories import PanelFactory, offline_judge
from tests.support.builders import checklisted_query

pytestmark = pytest.mark.browser

HOSTILE = '<img src=x onerror="window.hacked=1"><script>window.hacked=1</script>'
TURNS = [
    {"role": "user", "content": "How did Q3 revenue compare with guidance?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "name": "search_filings", "arguments": {"ticker": "SLVX", "form": "10-Q"}}]},
    {"role": "tool", "tool_call_id": "c1", "name": "search_filings",
     "content": f"Q3 10-Q: revenue $4.12 billion. {HOSTILE}"},
    {"role": "assistant", "content": "Revenue was $4.12 billion, above guidance."},
]  # fmt: skip
CONTEXT = [
    {"id": "doc-1", "title": "Q3 10-Q", "source": "SEC EDGAR", "text": "Revenue: $4.12 billion."},
    {"id": "doc-2", "title": "Guidance release", "source": "IR", "text": "Guided $3.9–4.1bn."},
]


def test_reviewer_reads_and_searches_an_agents_trajectory(page, reviewed_dataset, reviewer, owner):
    made = checklisted_query(reviewed_dataset, criteria=2, answers=1)
    (answer,) = made.answers
    answer.text, answer.turns, answer.context = "Revenue was $4.12 billion.", TURNS, CONTEXT
    answer.metadata = {"model": "agent-1", "latency_ms": 5230}
    answer.save()
    CriterionCheck.objects.create(
        criterion=made.criteria[0], kind="tool_set", params={"tools": ["search_filings", "calc"]}
    )
    panel = PanelFactory(judges=[offline_judge()])
    run = runs.run_start(run=runs.run_create(dataset=reviewed_dataset, panel=panel, by=owner))
    lifecycle.run_task(
        worker="t", run_id=run.pk, answer_id=answer.pk, judge_id=panel.judges.get().pk
    )

    log_in(page, reviewer.username)
    page.goto(f"/answers/{answer.pk}/review/?run={run.pk}")
    timeline = page.locator("[data-timeline]")
    expect(timeline.get_by_role("heading", name="Trajectory", exact=True)).to_be_visible()
    expect(timeline.locator(".turn")).to_have_count(4)
    expect(timeline.locator(".tool-call code")).to_have_text("search_filings")
    expect(timeline.locator("pre.arguments")).to_contain_text('"form": "10-Q"')
    # Which trajectory check failed and why.
    check = timeline.locator(".trajectory-checks li")
    expect(check).to_contain_text("fail")
    expect(check).to_contain_text("missing: calc")
    # Tool results and passages are folded until opened.
    result = timeline.locator("pre.tool-result")
    expect(result).to_be_hidden()
    timeline.locator(".turn-tool summary").click()
    expect(result).to_be_visible()
    expect(result).to_contain_text("<script>window.hacked=1</script>")  # shown as text
    assert page.evaluate("window.hacked") is None
    assert timeline.locator("pre.tool-result img, pre.tool-result script").count() == 0

    # Search: only the passage about guidance stays, opened.
    page.get_by_label("Search the trajectory").fill("guided")
    expect(timeline.locator("[data-timeline-count]")).to_have_text("1 of 8 match")
    expect(timeline.locator(".passages li:not([hidden])")).to_have_count(1)
    expect(timeline.locator("pre.passage").filter(has_text="Guided")).to_be_visible()
    expect(timeline.locator(".turn:not([hidden])")).to_have_count(0)
    page.get_by_label("Search the trajectory").fill("no such words")
    expect(timeline.locator("[data-timeline-none]")).to_be_visible()
    page.get_by_label("Search the trajectory").fill("")
    expect(timeline.locator(".turn:not([hidden])")).to_have_count(4)
    # Typing in the search never labels: the keyboard shortcuts ignore it.
    page.get_by_label("Search the trajectory").fill("pf")
    expect(page.locator(".review-row.labelled")).to_have_count(0)
    page.get_by_label("Search the trajectory").fill("")

    assert serious_violations(page) == []
