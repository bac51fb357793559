"""Judge stability on a scripted judge (issue 43): the loopback server answers some
criteria differently on repeated calls of one judge (a panel member with three samples);
the run reports the flip share of each criterion and overall within its interval, marks the
flipping criteria unstable and shows them on the run page."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.urls import reverse

from annotation import services
from evaluation.runs import lifecycle
from evaluation.runs import services as runs
from evaluation.runs.stability import run_stability
from loopback import verdict_responder
from tests.factories import AnswerFactory, PanelFactory, loopback_judges, valid_criteria

pytestmark = pytest.mark.django_db

# Criterion text -> the answers (by their text) on which the scripted judge flips.
FLIPPING = {
    "States Q3 revenue of $4.12 billion.": {"a0", "a1", "a2", "a3"},
    "Reports a Q3 gross margin of 61.5%.": {"a0", "a1", "a2", "a3"},
    "Mentions the Q4 revenue guidance of $4.3–4.45 billion.": {"a0"},
}
ANSWERS = ("a0", "a1", "a2", "a3")
SAMPLES = 3


def _flipping_judge():
    """pass, fail, pass… on the repeated calls of a flipping item; pass on every other."""
    calls: Counter[str] = Counter()
    lock = threading.Lock()

    def verdict(request) -> str:
        text = request.last_user_text
        flips = any(
            criterion in text and any(f"Answer:\n{a}" in text for a in answers)
            for criterion, answers in FLIPPING.items()
        )
        if not flips:
            return "pass"
        with lock:
            calls[text] += 1
            return "pass" if calls[text] % 2 else "fail"

    return verdict_responder(verdict, failure_kind="missing")


def test_a_scripted_flipping_judge_is_reported_within_its_interval(
    dataset, owner, collaborator, query, loopback_openai, client
):
    checklist = services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria(), submit=True
    )
    criteria = {c.text: c for c in checklist.criteria.all()}
    answers = [AnswerFactory(query=query, text=text) for text in ANSWERS]
    loopback_openai.responder = _flipping_judge()
    (judge,) = loopback_judges(loopback_openai, 1)
    panel = PanelFactory(judges=[judge], judges__samples=SAMPLES)
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=panel, by=owner))
    for answer in answers:
        lifecycle.run_task(worker="test", run_id=run.pk, answer_id=answer.pk, judge_id=judge.pk)
    run.refresh_from_db()
    assert run.status == "done"

    found = run_stability(run)
    items = len(criteria) * len(ANSWERS)
    flipped = sum(len(a) for a in FLIPPING.values())
    assert found["items"] == items
    assert found["flips"]["count"] == flipped
    assert found["flips"]["low"] <= flipped / items <= found["flips"]["high"]
    # Fleiss' kappa by hand: 15 items pass three times (agreement 1), 9 flip pass, fail,
    # pass (1/3); P = (15 + 9/3) / 24 = 0.75; pass share 63/72 = 0.875, Pe = 0.78125. So
    # rare fails make repeated calls agree less than chance would (kappa < 0).
    assert found["kappa"] == pytest.approx((0.75 - 0.78125) / (1 - 0.78125))
    by_criterion = {c["criterion_id"]: c["flips"] for c in found["criteria"]}
    for text, criterion in criteria.items():
        share = len(FLIPPING.get(text, ())) / len(ANSWERS)
        rate = by_criterion[criterion.pk]
        assert rate["rate"] == share
        assert rate["low"] <= share <= rate["high"]

    client.force_login(owner)
    page = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert "Judge stability (repeated calls)" in page
    assert page.count("data-stability-criterion=") == len(criteria)
    # Four of four items flipped: surely above the 10% floor. One of four: not surely.
    assert page.count(">unstable</span>") == 2


def test_a_run_without_repeated_calls_shows_no_stability(
    dataset, owner, collaborator, query, loopback_openai, client
):
    services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria(), submit=True
    )
    answer = AnswerFactory(query=query, text="a0")
    (judge,) = loopback_judges(loopback_openai, 1)
    run = runs.run_start(
        run=runs.run_create(dataset=dataset, panel=PanelFactory(judges=[judge]), by=owner)
    )
    lifecycle.run_task(worker="test", run_id=run.pk, answer_id=answer.pk, judge_id=judge.pk)
    assert run_stability(run)["items"] == 0
    client.force_login(owner)
    page = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert "Judge stability (repeated calls)" not in page
