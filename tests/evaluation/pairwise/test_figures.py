"""The figures of pairwise votes in pages (issue 42 points 4 and 5): the session's result
and agreement for admins only, and on the analytics page the win rates, the chart and the
checklist's agreement with the reviewers' preference, read from the run's kept scores."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluation.analytics import figures as analytics_figures
from evaluation.metrics import preference
from evaluation.pairwise import figures, services
from evaluation.pairwise.models import PairwiseJudgeVote, PairwisePair
from tests.factories import AnswerFactory, SystemFactory, offline_judge

pytestmark = pytest.mark.django_db


def vote(session, reviewer, prefer: dict[int, str]) -> None:
    """`reviewer` votes on every pair open to them, preferring side prefer[query id]."""
    while (shown := services.pair_show(session=session, reviewer=reviewer)) is not None:
        wanted = prefer[shown.pair.query_id]
        choice = "tie" if wanted == "tie" else ("1" if (wanted == "a") == shown.first_is_a else "2")
        services.vote_cast(vote=shown, choice=choice)


def test_the_checklist_agreement_is_read_from_the_runs_scores(scored, reviewer, owner):
    run, session, queries = scored
    # Reviewers prefer Alpha on three queries, Beta on one.
    prefer = dict(zip(queries, ["a", "a", "a", "b"], strict=True))
    vote(session, reviewer, prefer)
    vote(session, owner, prefer)
    found = figures.dataset_figures(session.dataset, run)
    assert found.votes == 8
    (row,) = found.rows
    assert (row.a, row.b, row.figures.a.count, row.figures.b.count) == (
        "Alpha 1.0",
        "Beta 1.0",
        6,
        2,
    )
    assert found.prediction.overall == preference.wilson(3, 4)
    assert [(g, r.n) for g, r in found.prediction.by_gap] == [
        ("0%–10%", 0),
        ("10%–25%", 0),
        ("25%+", 4),
    ]
    assert found.agreement.method == "cohen" and found.agreement.items == 4
    assert found.strengths == ()  # two sides: no Bradley–Terry


def test_three_sides_get_bradley_terry_strengths(scored, reviewer, owner):
    run, session, queries = scored
    gamma = SystemFactory(name="Gamma")
    for pair in PairwisePair.objects.filter(session=session):
        AnswerFactory(query=pair.query, system=gamma, text="Gamma")
    other = services.session_create(
        dataset=session.dataset, name="Session two", system_a=session.system_a, system_b=gamma,
        reviewers_per_pair=1, by=owner,
    )  # fmt: skip
    vote(session, reviewer, dict.fromkeys(queries, "a"))
    vote(other, reviewer, dict.fromkeys(queries, "a"))
    found = figures.dataset_figures(session.dataset, run, resamples=50)
    assert found.strengths[0].system == "Alpha 1.0"
    assert {s.system for s in found.strengths} == {"Alpha 1.0", "Beta 1.0", "Gamma 1.0"}


def test_the_session_result_is_for_admins_only(client, scored, reviewer, owner):
    _run, session, queries = scored
    vote(session, reviewer, dict.fromkeys(queries, "a"))
    url = reverse("pairwise-session", args=[session.pk])
    client.force_login(reviewer)
    page = client.get(url).content.decode()
    assert "pairwise-result" not in page and "Alpha" not in page
    client.force_login(owner)
    page = client.get(url).content.decode()
    assert 'id="pairwise-result"' in page and "4/4" in page


def test_the_analytics_page_shows_win_rates_beside_the_human_line(
    client, scored, reviewer, owner, django_assert_max_num_queries
):
    run, session, queries = scored
    vote(session, reviewer, dict(zip(queries, ["a", "a", "b", "tie"], strict=True)))
    analytics_figures.warm(run)
    url = reverse("dataset-analytics", args=[session.dataset_id]) + f"?run={run.pk}"
    client.force_login(reviewer)
    assert "pairwise-figures" not in client.get(url).content.decode()  # reviewers vote blind
    client.force_login(owner)
    client.get(url)  # the run's scores kept on the first read
    with django_assert_max_num_queries(40):
        page = client.get(url).content.decode()
    assert 'id="pairwise-win-rates"' in page and 'id="pairwise-prediction"' in page
    assert "Alpha 1.0 over Beta 1.0" in page and "Checklist agrees with reviewers" in page
    assert "2/3" in page  # a decided pair of three went to the lower score


def judge_replies(session, judge, by_query: dict[int, list[tuple[str, str]]]) -> None:
    """Generated pairwise-judge replies: per query, one (ab side, ba side) per sample."""
    for pair in PairwisePair.objects.filter(session=session):
        for sample, (ab, ba) in enumerate(by_query.get(pair.query_id, [])):
            for order, side in (("ab", ab), ("ba", ba)):
                PairwiseJudgeVote.objects.create(
                    pair=pair, judge=judge, sample=sample, order=order, preference=side,
                    outcome=PairwiseJudgeVote.Outcome.VOTED, cache_key=f"{pair.pk}-{sample}",
                )  # fmt: skip


def test_the_checklist_is_set_against_the_pairwise_judge_too(
    client, scored, owner, django_assert_max_num_queries
):
    """Alpha scores higher on all four queries. Hand count: q0 both judges prefer A in both
    orders (agrees); q1 judge one prefers B in both orders, twice (disagrees); q2 judge one
    flips with the order (a tie: left out); q3 the two judges split A / B (no verdict: not a
    pair of the figure). So 1 of 2 decided pairs agrees, 1 tie."""
    run, session, queries = scored
    one, two = offline_judge("Pair judge one"), offline_judge("Pair judge two")
    q0, q1, q2, q3 = queries
    judge_replies(session, one, {q0: [("a", "a")], q1: [("b", "b"), ("b", "b")],
                                 q2: [("a", "b")], q3: [("a", "a")]})  # fmt: skip
    judge_replies(session, two, {q0: [("a", "a")], q3: [("b", "b")]})
    # An unparseable reply is never a preference.
    pair = PairwisePair.objects.get(session=session, query_id=q2)
    PairwiseJudgeVote.objects.create(
        pair=pair, judge=two, order="ab", outcome=PairwiseJudgeVote.Outcome.UNPARSEABLE,
        cache_key="x",
    )  # fmt: skip

    found = figures.dataset_figures(session.dataset, run)
    assert found.votes == 0 and found.prediction is None  # no reviewer voted
    assert found.judge_pairs == 4  # pairs some judge gave a verdict (q3 split: left out below)
    judged = found.judge_prediction
    assert judged.overall == preference.wilson(1, 2)
    assert (judged.ties, judged.not_separated) == (1, 0)
    # The same function as the reviewers' figure, on the judges' verdicts by hand.
    by_hand = preference.checklist_prediction(
        [preference.PredictedPair(p, 1.0, 0.5) for p in ("a", "b", "tie")]
    )
    assert judged.overall == by_hand.overall and judged.by_gap == by_hand.by_gap

    analytics_figures.warm(run)
    url = reverse("dataset-analytics", args=[session.dataset_id]) + f"?run={run.pk}"
    client.force_login(owner)
    client.get(url)
    with django_assert_max_num_queries(42):
        page = client.get(url).content.decode()
    assert 'id="pairwise-judge-prediction"' in page
    assert "Checklist agrees with the pairwise judge" in page and "1/2" in page
