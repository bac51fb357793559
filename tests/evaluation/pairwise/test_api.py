"""The pairwise API (issue 42): sessions, progress, admins-only results and figures, and a
reviewer's blind vote by program, under the pages' rules: blind positions (no system, no
side, no other rater's vote), the target count, undo; a reviewer of another dataset gets a
404, an expert a 403, a non-admin no results; a fixed number of queries per request."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotation import roles, services
from evaluation.pairwise import services as pairwise
from evaluation.pairwise.models import PairwiseVote
from tests.evaluation.pairwise.test_figures import judge_replies, vote
from tests.factories import UserFactory, offline_judge

pytestmark = pytest.mark.django_db


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def url(name: str, pk: int) -> str:
    return reverse(f"api-evaluation:{name}", args=[pk])


@pytest.fixture
def stranger(db):
    """A reviewer, but of another dataset."""
    from django.contrib.auth.models import Group

    user = UserFactory(username="stranger")
    user.groups.add(Group.objects.get(name=roles.Group.REVIEWER.value))
    other = services.dataset_create(name="Other dataset", by=user)
    services.dataset_set_role(dataset=other, user=user, role=roles.DatasetRole.REVIEWER)
    return user


def vote_all(client: APIClient, session, choice: str = "1") -> list[dict]:
    """Vote on every pair the API serves to this client; the pairs as served."""
    served = []
    body = client.get(url("pairwise-next", session.pk)).json()
    while body["pair"] is not None:
        served.append(body["pair"])
        response = client.post(
            url("pairwise-votes", session.pk),
            {"vote": body["pair"]["vote"], "choice": choice}, format="json",
        )  # fmt: skip
        assert response.status_code == 200, response.content
        body = response.json()
    return served


def test_a_reviewer_votes_blind_through_the_api(
    pairwise_session, reviewer, second_reviewer, django_assert_max_num_queries
):
    # Another reviewer's reason must never reach this one.
    other = pairwise.pair_show(session=pairwise_session, reviewer=second_reviewer)
    pairwise.vote_cast(vote=other, choice="2", reason="SECRET-REASON")
    client = api(reviewer)
    # Access (3), the pair drawn and its row made (6), the progress (2): whatever the size.
    with django_assert_max_num_queries(14):
        response = client.get(url("pairwise-next", pairwise_session.pk))
    assert response.status_code == 200
    body = response.json()
    pair = body["pair"]
    assert set(pair) == {"vote", "query", "query_external_id", "query_date", "category",
                         "answer_1", "answer_2", "checklists"}  # fmt: skip
    text = response.content.decode()
    assert "SECRET-REASON" not in text and '"a"' not in text and "system" not in text
    assert "Alpha answers" in text and "Beta answers" in text  # only inside the answers
    assert body["mine"] == {"voted": 0, "open": 1, "waiting": 4, "total": 5}
    # Reloading serves the same pair in the same position.
    assert client.get(url("pairwise-next", pairwise_session.pk)).json()["pair"] == pair

    with django_assert_max_num_queries(25):
        response = client.post(
            url("pairwise-votes", pairwise_session.pk),
            {"vote": pair["vote"], "choice": "1", "reason": "Clearer."}, format="json",
        )  # fmt: skip
    assert response.status_code == 200
    stored = PairwiseVote.objects.get(pk=pair["vote"])
    alpha_first = pair["answer_1"].startswith("Alpha")
    assert stored.first_is_a == alpha_first and stored.preference == ("a" if alpha_first else "b")
    served = [pair, *vote_all(client, pairwise_session, "tie")]
    assert len({p["vote"] for p in served}) == 5
    done = client.get(url("pairwise-next", pairwise_session.pk)).json()
    assert done == {"pair": None, "mine": {"voted": 5, "open": 0, "waiting": 0, "total": 5}}


def test_positions_differ_between_reviewers_and_the_target_closes_a_pair(
    pairwise_session, reviewer, second_reviewer, owner
):
    first = {p["query"]: p["answer_1"] for p in vote_all(api(reviewer), pairwise_session)}
    second = {p["query"]: p["answer_1"] for p in vote_all(api(second_reviewer), pairwise_session)}
    assert first.keys() == second.keys() and all(first[q] != second[q] for q in first)
    # Two reviewers per pair: nothing left for a third.
    assert api(owner).get(url("pairwise-next", pairwise_session.pk)).json()["pair"] is None


def test_bad_votes_are_refused_by_field_and_nothing_changes(
    pairwise_session, reviewer, second_reviewer
):
    client = api(reviewer)
    pair = client.get(url("pairwise-next", pairwise_session.pk)).json()["pair"]
    votes = url("pairwise-votes", pairwise_session.pk)
    bad = client.post(votes, {"vote": pair["vote"], "choice": "3"}, format="json")
    assert bad.status_code == 400 and "choice" in bad.json()
    # Someone else's vote row is a 404, never a vote.
    theirs = pairwise.pair_show(session=pairwise_session, reviewer=second_reviewer)
    stolen = client.post(votes, {"vote": theirs.pk, "choice": "1"}, format="json")
    assert stolen.status_code == 404
    assert not PairwiseVote.objects.exclude(preference="").exists()


def test_undo_takes_back_the_last_vote(pairwise_session, reviewer):
    client = api(reviewer)
    undo = url("pairwise-undo", pairwise_session.pk)
    assert client.post(undo).status_code == 409
    pair = client.get(url("pairwise-next", pairwise_session.pk)).json()["pair"]
    client.post(url("pairwise-votes", pairwise_session.pk),
                {"vote": pair["vote"], "choice": "2"}, format="json")  # fmt: skip
    response = client.post(undo)
    assert response.status_code == 200
    assert response.json()["pair"] == pair and response.json()["mine"]["voted"] == 0


def test_results_are_for_admins_and_sessions_for_members(
    pairwise_session, reviewer, owner, collaborator, stranger, django_assert_max_num_queries
):
    vote_all(api(reviewer), pairwise_session, "tie")
    session_url = url("pairwise-session", pairwise_session.pk)
    as_reviewer = api(reviewer).get(session_url).json()
    assert as_reviewer["results"] is None and as_reviewer["mine"]["voted"] == 5
    assert as_reviewer["raters"] == [{"rater": "reviewer", "voted": 5}]
    with django_assert_max_num_queries(14):
        as_owner = api(owner).get(session_url).json()
    assert as_owner["results"]["win_tie_loss"]["tie"]["count"] == 5
    assert as_owner["results"]["win_tie_loss"]["tie"]["low"] is not None
    assert (as_owner["side_a"], as_owner["side_b"]) == ("Alpha 1.0", "Beta 1.0")

    dataset = pairwise_session.dataset
    listed = url("pairwise-sessions", dataset.pk)
    with django_assert_max_num_queries(8):
        body = api(reviewer).get(listed).json()
    assert [(s["name"], s["pairs"], s["votes"]) for s in body] == [("Session one", 5, 5)]
    figures = url("pairwise-figures", dataset.pk)
    assert api(reviewer).get(figures).status_code == 403
    with django_assert_max_num_queries(10):
        found = api(owner).get(figures).json()
    assert found["rows"][0]["figures"]["n"] == 5 and found["strengths"] == []
    assert found["prediction"] is None and found["judge_prediction"] is None  # no run asked
    assert api(owner).get(figures, {"run": "x"}).status_code == 400

    # A reviewer of another dataset: every route a 404; an expert of this one: a 403.
    for who, code in ((stranger, 404), (collaborator, 403)):
        client = api(who)
        for name in ("pairwise-session", "pairwise-next"):
            assert client.get(url(name, pairwise_session.pk)).status_code == code
        for name in ("pairwise-votes", "pairwise-undo"):
            assert (
                client.post(url(name, pairwise_session.pk), {}, format="json").status_code == code
            )
        assert client.get(listed).status_code == code
        assert client.get(figures).status_code == code
    assert PairwiseVote.objects.filter(rater__in=["stranger", "collaborator"]).count() == 0


def test_the_figures_set_the_checklist_against_reviewers_and_the_pairwise_judge(
    scored, reviewer, owner
):
    run, session, queries = scored  # Alpha scores higher on every query
    vote(session, reviewer, dict(zip(queries, ["a", "a", "b", "tie"], strict=True)))
    judge = offline_judge("Pair judge")
    judge_replies(session, judge, {q: [("a", "a")] for q in queries})
    figures = url("pairwise-figures", session.dataset_id)
    body = api(owner).get(figures, {"run": run.pk}).json()
    assert (body["prediction"]["overall"]["count"], body["prediction"]["overall"]["n"]) == (2, 3)
    judged = body["judge_prediction"]
    assert (judged["overall"]["count"], judged["overall"]["n"], body["judge_pairs"]) == (4, 4, 4)
    assert [g["bucket"] for g in judged["by_gap"]] == ["0%–10%", "10%–25%", "25%+"]
