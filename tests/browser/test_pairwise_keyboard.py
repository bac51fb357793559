"""A reviewer votes on five blind pairs from the keyboard alone in a real browser, with an
undo; a second reviewer sees every pair the other way round (issue 42, "Must show")."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from evaluation.pairwise.models import PairwiseVote
from tests.browser.conftest import log_in
from tests.evaluation.pairwise import conftest as pairwise_fixtures

pytestmark = pytest.mark.browser
# The session of five pairs and the second reviewer, as the pairwise tests make them.
pairwise_session = pairwise_fixtures.pairwise_session
second_reviewer = pairwise_fixtures.second_reviewer


def wait_for_votes(rater: str, count: int, timeout: float = 10.0) -> list[PairwiseVote]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        votes = list(
            PairwiseVote.objects.filter(rater=rater).exclude(preference="").order_by("voted_at")
        )
        if len(votes) >= count:
            return votes
        time.sleep(0.1)
    return votes


def vote_five(page, keys: str) -> dict[int, str]:
    """Press one key per pair; return what each pair showed as Answer 1."""
    shown = {}
    for i, key in enumerate(keys):
        expect(page.locator("#pairwise-progress strong")).to_have_text(str(i))
        pair = int(page.locator("[data-pair]").get_attribute("data-pair"))
        shown[pair] = page.locator('[data-answer="1"]').inner_text()
        expect(page.locator("[data-query-date]")).to_be_visible()
        page.keyboard.press(key)
    expect(page.locator("#pairwise-done")).to_be_visible()
    return shown


def test_a_reviewer_votes_on_five_blind_pairs_by_keyboard(
    page, pairwise_session, reviewer, second_reviewer
):
    log_in(page, reviewer.username)
    page.goto(f"/pairwise/{pairwise_session.pk}/vote/")
    expect(page.get_by_role("heading", name="Answer 1")).to_be_visible()
    # A key typed in the reason box is text, not a vote.
    page.get_by_label("Reason (optional)").fill("t0 12")
    expect(page.locator("#pairwise-progress strong")).to_have_text("0")
    page.get_by_label("Reason (optional)").blur()

    first_shown = vote_five(page, "12t01")
    votes = wait_for_votes("reviewer", 5)
    assert [v.preference for v in votes][2:4] == ["tie", "tie"]
    assert votes[0].reason == "t0 12"
    for vote, key in zip(votes, "12t01", strict=True):
        if key in "12":
            shown_first = "a" if vote.first_is_a else "b"
            assert (vote.preference == shown_first) == (key == "1")

    # u takes the last vote back: the same pair comes back, in the same position.
    page.keyboard.press("u")
    expect(page.locator("#pairwise-progress strong")).to_have_text("4")
    assert int(page.locator("[data-pair]").get_attribute("data-pair")) == votes[-1].pair_id
    assert page.locator('[data-answer="1"]').inner_text() == first_shown[votes[-1].pair_id]
    page.keyboard.press("2")
    expect(page.locator("#pairwise-done")).to_be_visible()
    assert len(wait_for_votes("reviewer", 5)) == 5

    page.context.clear_cookies()
    log_in(page, second_reviewer.username)
    page.goto(f"/pairwise/{pairwise_session.pk}/vote/")
    second_shown = vote_five(page, "11111")
    assert second_shown.keys() == first_shown.keys()
    # Every pair was shown the other way round to the second reviewer.
    assert all(second_shown[p] != first_shown[p] for p in first_shown)
    assert len(wait_for_votes("second_reviewer", 5)) == 5
    for pair_id in first_shown:
        positions = set(
            PairwiseVote.objects.filter(pair_id=pair_id).values_list("first_is_a", flat=True)
        )
        assert positions == {True, False}
