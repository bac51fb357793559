"""Pairwise LLM judges (issue 42 point 3) through the real openai client and the loopback
server: each pair asked in both orders, a judge scripted to prefer the first position has
every verdict flip (reported, counted as a tie), a fair judge none; replies are reused by
cache key; an unparseable reply is kept as such, never a preference."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluation.judging import pair_plan
from evaluation.pairwise import judging
from evaluation.pairwise.models import PairwiseJudgeVote
from tests.evaluation.pairwise.test_figures import vote
from tests.factories import PanelFactory, loopback_judges

pytestmark = pytest.mark.django_db


def answer(better: str):
    return lambda request: {"better": better, "rationale": "Scripted."}


def test_a_judge_that_prefers_the_first_position_flips_on_every_pair(
    loopback_openai, pairwise_session, reviewer
):
    loopback_openai.responder = answer("1")
    (judge,) = loopback_judges(loopback_openai, 1)
    panel = PanelFactory(judges=[judge])
    assert judging.judge_session(session=pairwise_session, panel=panel) == 10  # 5 pairs × 2
    assert loopback_openai.call_count == 10
    replies = PairwiseJudgeVote.objects.all()
    assert {(r.order, r.preference) for r in replies} == {("ab", "a"), ("ba", "b")}
    assert all(r.raw_output and r.prompt_version.endswith("+pair-v1") for r in replies)

    vote(pairwise_session, reviewer, {p.query_id: "a" for p in pairwise_session.pairs.all()})
    (figures,) = judging.judge_figures(pairwise_session)
    assert (figures.bias.flips.count, figures.bias.flips.n) == (5, 5)
    assert figures.bias.flips.rate == 1.0 and figures.bias.first_preferred.rate == 1.0
    assert set(figures.verdicts.values()) == {"tie"}  # a flip counts as a tie
    assert figures.agreement.n == 5

    # Asked again: every reply is reused by its cache key, no call is paid twice.
    assert judging.judge_session(session=pairwise_session, panel=panel) == 0
    assert loopback_openai.call_count == 10
    assert PairwiseJudgeVote.objects.filter(cache_hit=True).count() == 10


def test_a_judge_that_reads_the_answers_does_not_flip(loopback_openai, pairwise_session):
    # Prefers whichever position holds Alpha's answer: a preference for an answer, not a place.
    def prefer_alpha(request):
        text = request.last_user_text
        first = text.index("Answer 1:")
        second = text.index("Answer 2:")
        alpha = text.index("Alpha answers")
        return {"better": "1" if first < alpha < second else "2", "rationale": "Alpha."}

    loopback_openai.responder = prefer_alpha
    panel = PanelFactory(judges=loopback_judges(loopback_openai, 1))
    judging.judge_session(session=pairwise_session, panel=panel)
    (figures,) = judging.judge_figures(pairwise_session)
    assert figures.bias.flips.count == 0 and figures.bias.first_preferred.rate == 0.5
    assert set(figures.verdicts.values()) == {"a"}


def test_an_unparseable_reply_is_kept_as_such_and_asked_again(loopback_openai, pairwise_session):
    loopback_openai.responder = lambda request: {"better": "both", "rationale": "?"}
    panel = PanelFactory(judges=loopback_judges(loopback_openai, 1))
    judging.judge_session(session=pairwise_session, panel=panel)
    assert set(PairwiseJudgeVote.objects.values_list("outcome", "preference")) == {
        ("unparseable", "")
    }
    assert judging.judge_figures(pairwise_session) == []
    loopback_openai.responder = answer("tie")
    assert judging.judge_session(session=pairwise_session, panel=panel) == 10
    assert set(PairwiseJudgeVote.objects.values_list("outcome", "preference")) == {("voted", "tie")}


def test_pair_keys_name_the_order_and_never_collide_with_a_criterion_vote():
    class J:
        base_url, model, api_key_env, max_tokens, seed = "http://x/v1", "m", "", 256, None
        timeout, token_parameter, response_format, reasoning_effort = 5.0, "max_tokens", "auto", ""
        criteria_per_call, context_tokens = 1, 8000

    class T:
        version, system = "verdict-v1", ""

    import datetime as dt

    common = dict(
        judge=J, tuning=T, temperature=0.0, sample=0, query="Q", query_date=dt.date(2026, 1, 2)
    )
    ab = pair_plan.plan_pair(**common, first="one", second="two", order="ab")
    ba = pair_plan.plan_pair(**common, first="two", second="one", order="ba")
    assert ab.cache_key != ba.cache_key
    assert (
        ab.cache_key
        == pair_plan.plan_pair(**common, first="one", second="two", order="ab").cache_key
    )
    assert (
        "Answer 1:\none" in ab.messages[1]["content"] and "2026-01-02" in ab.messages[1]["content"]
    )
    with pytest.raises(ValueError, match="order"):
        pair_plan.plan_pair(**common, first="one", second="two", order="xy")


def test_admins_queue_the_judging_from_the_session_page(
    client,
    loopback_openai,
    pairwise_session,
    owner,
    reviewer,
    eager_refresh,  # Celery runs the queued judging inside the request, as without a worker
    django_capture_on_commit_callbacks,
):
    loopback_openai.responder = answer("1")
    panel = PanelFactory(judges=loopback_judges(loopback_openai, 1))
    url = reverse("pairwise-judge", args=[pairwise_session.pk])
    client.force_login(reviewer)
    assert client.post(url, {"panel": panel.pk}).status_code == 403
    client.force_login(owner)
    assert client.post(url, {"panel": "x"}).status_code == 302
    assert not PairwiseJudgeVote.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        client.post(url, {"panel": panel.pk})
    assert PairwiseJudgeVote.objects.count() == 10
    page = client.get(reverse("pairwise-session", args=[pairwise_session.pk])).content.decode()
    assert 'id="pairwise-judges"' in page and "5/5" in page  # every pair flipped
