"""The blind pairwise queue (issue 42 point 2): sessions made from two sides' answers, the
next pair for a reviewer with its position drawn and kept, votes read back as sides, undo,
the target of reviewers per pair, and refusals that change nothing."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from evaluation.pairwise import selectors, services
from evaluation.pairwise.models import PairwisePair, PairwiseSession, PairwiseVote
from tests.evaluation.pairwise.conftest import two_systems_answered
from tests.factories import AnswerFactory, QueryFactory

pytestmark = pytest.mark.django_db


def test_a_session_pairs_the_queries_both_sides_answered(reviewed_dataset, owner):
    alpha, beta, made = two_systems_answered(reviewed_dataset, queries=3)
    AnswerFactory(query=QueryFactory(dataset=reviewed_dataset), system=alpha)  # Beta did not
    session = services.session_create(
        dataset=reviewed_dataset, name="s", system_a=alpha, system_b=beta, by=owner
    )
    pairs = list(session.pairs.order_by("query_id"))
    assert [p.query_id for p in pairs] == [q.pk for q, _a, _b in made]
    assert [(p.answer_a_id, p.answer_b_id) for p in pairs] == [(a.pk, b.pk) for _q, a, b in made]


def test_two_runs_of_one_system_are_two_sides(reviewed_dataset, owner):
    query = QueryFactory(dataset=reviewed_dataset)
    old = AnswerFactory(query=query, run_label="v1")
    new = AnswerFactory(query=query, system=old.system, run_label="v2")
    session = services.session_create(
        dataset=reviewed_dataset, name="v1 vs v2", system_a=old.system, run_label_a="v1",
        system_b=old.system, run_label_b="v2", by=owner,
    )  # fmt: skip
    pair = session.pairs.get()
    assert (pair.answer_a_id, pair.answer_b_id) == (old.pk, new.pk)


def test_one_side_twice_or_no_common_query_is_refused_and_makes_nothing(reviewed_dataset, owner):
    alpha, beta, _ = two_systems_answered(reviewed_dataset, queries=1)
    with pytest.raises(ValidationError) as same:
        services.session_create(
            dataset=reviewed_dataset, name="s", system_a=alpha, system_b=alpha, by=owner
        )
    assert "system_b" in same.value.message_dict
    with pytest.raises(ValidationError, match="No query of this dataset"):
        services.session_create(
            dataset=reviewed_dataset, name="s", system_a=alpha, system_b=beta,
            run_label_b="never", by=owner,
        )  # fmt: skip
    assert not PairwiseSession.objects.exists() and not PairwisePair.objects.exists()


def test_a_reviewer_sees_the_same_position_until_they_vote(pairwise_session, reviewer):
    shown = services.pair_show(session=pairwise_session, reviewer=reviewer)
    again = services.pair_show(session=pairwise_session, reviewer=reviewer)
    assert again.pk == shown.pk and again.first_is_a == shown.first_is_a
    assert PairwiseVote.objects.count() == 1


def test_votes_are_read_back_as_sides_and_undo_takes_back_the_last(pairwise_session, reviewer):
    first = services.pair_show(session=pairwise_session, reviewer=reviewer)
    services.vote_cast(vote=first, choice="1", reason="  clearer table ")
    first.refresh_from_db()
    assert first.preference == ("a" if first.first_is_a else "b")
    assert first.reason == "clearer table" and first.voted_at is not None
    second = services.pair_show(session=pairwise_session, reviewer=reviewer)
    assert second.pair_id != first.pair_id
    services.vote_cast(vote=second, choice="tie")
    third = services.pair_show(session=pairwise_session, reviewer=reviewer)  # shown, open

    undone = services.vote_undo(session=pairwise_session, reviewer=reviewer)
    assert undone.pk == second.pk and undone.preference == "" and undone.voted_at is None
    # The undone pair is the one shown next, in the position it had; the open one went back.
    shown = services.pair_show(session=pairwise_session, reviewer=reviewer)
    assert (shown.pk, shown.first_is_a) == (second.pk, second.first_is_a)
    assert not PairwiseVote.objects.filter(pk=third.pk).exists()
    assert selectors.progress(pairwise_session, reviewer.username).voted == 1


def test_positions_are_swapped_for_the_second_reviewer(pairwise_session, reviewer, second_reviewer):
    firsts = {}
    for person in (reviewer, second_reviewer):
        while (vote := services.pair_show(session=pairwise_session, reviewer=person)) is not None:
            firsts.setdefault(vote.pair_id, []).append(vote.first_is_a)
            services.vote_cast(vote=vote, choice="2")
    assert len(firsts) == 5
    assert all(one != two for one, two in firsts.values())


def test_a_pair_leaves_the_queue_at_its_target(pairwise_session, reviewer, second_reviewer, owner):
    for person in (reviewer, second_reviewer):  # the target is 2 reviewers per pair
        while (vote := services.pair_show(session=pairwise_session, reviewer=person)) is not None:
            services.vote_cast(vote=vote, choice="1")
    assert services.pair_show(session=pairwise_session, reviewer=owner) is None
    assert selectors.progress_by_rater(pairwise_session) == [
        ("reviewer", 5),
        ("second_reviewer", 5),
    ]


def test_the_vote_page_is_blind(client, pairwise_session, reviewer, second_reviewer):
    vote = services.pair_show(session=pairwise_session, reviewer=second_reviewer)
    services.vote_cast(vote=vote, choice="1", reason="OTHER-REVIEWER-REASON")
    client.force_login(reviewer)
    page = client.get(reverse("pairwise-vote", args=[pairwise_session.pk])).content.decode()
    assert "Answer 1" in page and "Answer 2" in page
    assert "OTHER-REVIEWER-REASON" not in page
    # The systems' names appear only inside their answers' own texts.
    assert page.count("Alpha") == page.count("Alpha answers") == 1
    assert page.count("Beta") == page.count("Beta answers") == 1


def test_voting_by_post_moves_to_the_next_pair(client, pairwise_session, reviewer):
    client.force_login(reviewer)
    url = reverse("pairwise-vote", args=[pairwise_session.pk])
    client.get(url)
    vote = PairwiseVote.objects.get()
    response = client.post(url, {"vote": vote.pk, "choice": "2", "reason": "<b>x</b>"})
    assert response.status_code == 302 and response.url == url
    vote.refresh_from_db()
    assert vote.preference == ("b" if vote.first_is_a else "a") and vote.reason == "<b>x</b>"
    undo = client.post(reverse("pairwise-undo", args=[pairwise_session.pk]))
    assert undo.status_code == 302
    page = client.get(url).content.decode()
    assert "&lt;b&gt;x&lt;/b&gt;" in page  # their reason back to edit, escaped


@pytest.mark.parametrize(
    ("data", "field"),
    [({"choice": "1"}, "vote"), ({"vote": "1", "choice": "3"}, "choice"),
     ({"vote": "x", "choice": "1"}, "vote")],
)  # fmt: skip
def test_a_bad_vote_says_which_field_and_changes_nothing(
    client, pairwise_session, reviewer, data, field
):
    client.force_login(reviewer)
    url = reverse("pairwise-vote", args=[pairwise_session.pk])
    client.get(url)
    response = client.post(url, data)
    assert response.status_code == 400
    assert f"{field}:" in response.content.decode()
    assert not PairwiseVote.objects.exclude(preference="").exists()


def test_a_vote_on_another_reviewers_row_is_a_404(
    client, pairwise_session, reviewer, second_reviewer
):
    theirs = services.pair_show(session=pairwise_session, reviewer=second_reviewer)
    client.force_login(reviewer)
    url = reverse("pairwise-vote", args=[pairwise_session.pk])
    assert client.post(url, {"vote": theirs.pk, "choice": "1"}).status_code == 404
    theirs.refresh_from_db()
    assert theirs.preference == ""


def test_only_admins_create_sessions_and_a_bad_form_names_the_field(
    client, reviewed_dataset, reviewer, owner
):
    alpha, beta, _ = two_systems_answered(reviewed_dataset, queries=2)
    url = reverse("dataset-pairwise", args=[reviewed_dataset.pk])
    form = {"name": "A vs B", "system_a": alpha.pk, "system_b": beta.pk, "reviewers_per_pair": 2}
    client.force_login(reviewer)
    assert client.post(url, form).status_code == 403
    client.force_login(owner)
    same = client.post(url, {**form, "system_b": alpha.pk})
    assert same.status_code == 400 and "two different systems" in same.content.decode()
    assert client.post(url, {**form, "reviewers_per_pair": 0}).status_code == 400
    assert not PairwiseSession.objects.exists()
    made = client.post(url, form)
    session = PairwiseSession.objects.get()
    assert made.url == reverse("pairwise-session", args=[session.pk])
    assert session.pairs.count() == 2


def test_pages_query_counts(client, pairwise_session, reviewer, django_assert_max_num_queries):
    client.force_login(reviewer)
    pages = [
        reverse("dataset-pairwise", args=[pairwise_session.dataset_id]),
        reverse("pairwise-session", args=[pairwise_session.pk]),
        reverse("pairwise-vote", args=[pairwise_session.pk]),
    ]
    for url in pages:
        client.get(url)  # the vote page's first visit opens a pair
        with django_assert_max_num_queries(14):
            assert client.get(url).status_code == 200
