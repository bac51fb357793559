"""The dataset's admin opens the analytics page in a real browser after a pairwise session:
beside the human overlap line it shows the win rates (a chart and a table with intervals)
and whether the checklist scores predict the reviewers' preference (issue 42, "Must show"),
and beside it the pairwise judge's."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from evaluation.analytics import figures
from tests.browser.conftest import log_in
from tests.evaluation.pairwise import conftest as pairwise_fixtures
from tests.evaluation.pairwise import test_figures
from tests.factories import offline_judge

pytestmark = pytest.mark.browser
scored = pairwise_fixtures.scored  # four scored queries and a session of Alpha and Beta


def test_the_analytics_page_shows_win_rates_and_the_checklist_agreement(
    page, scored, reviewer, owner
):
    run, session, queries = scored
    # Alpha scores higher on every query; the reviewers prefer it on three of four.
    prefer = dict(zip(queries, ["a", "a", "a", "b"], strict=True))
    test_figures.vote(session, reviewer, prefer)
    test_figures.vote(session, owner, prefer)
    # A pairwise judge prefers Alpha in both orders on the first two queries, flips on the
    # third (a tie) and prefers Beta on the fourth: 2 of 3 decided pairs agree.
    replies = [[("a", "a")], [("a", "a")], [("a", "b")], [("b", "b")]]
    test_figures.judge_replies(
        session, offline_judge("Pair judge"), dict(zip(queries, replies, strict=True))
    )
    figures.warm(run)
    log_in(page, owner.username)
    page.goto(f"/datasets/{session.dataset_id}/analytics/?run={run.pk}")
    section = page.locator("#pairwise-figures")
    expect(section.get_by_role("heading", name="Pairwise preference")).to_be_visible()
    expect(section.locator("svg title").first).to_have_text(
        "Pairwise win rates and checklist–preference agreement"
    )
    expect(section.locator("#pairwise-win-rates tbody tr")).to_have_count(1)
    expect(section.locator("#pairwise-win-rates tbody tr td").nth(2)).to_contain_text("75.0%")
    overall = section.locator("#pairwise-prediction .human-row")
    expect(overall).to_contain_text("75.0%")
    expect(overall).to_contain_text("3/4")
    expect(section.get_by_text("Checklist agrees with reviewers")).to_have_count(1)
    # Beside it, the same figure for the pairwise judge.
    judged = section.locator("#pairwise-judge-prediction .judge-row")
    expect(judged).to_contain_text("2/3")
    expect(section.get_by_text("Checklist agrees with the pairwise judge")).to_have_count(1)
