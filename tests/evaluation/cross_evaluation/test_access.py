"""Who reads and writes perfect answers (the checklist's blind rule, pages and API), who sees
overlaps, and that pages stay flat as the data grows."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Checklist
from evaluation.answers.models import Answer
from evaluation.cross_evaluation import services
from tests.evaluation.cross_evaluation.two_queries import (
    codes,
    expert,
    grade_directly,
)
from tests.factories import QueryFactory
from tests.support.builders import checklisted_query

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(reviewed_dataset, query, owner, collaborator):
    """collaborator and bob submitted for the query, with perfect answers; cid has only a
    draft checklist (still annotating blind)."""
    bob, cid = expert(reviewed_dataset, "bob"), expert(reviewed_dataset, "cid")
    mine = checklisted_query(query=query, author=collaborator, criteria=codes(1, 2)).checklist
    bobs = checklisted_query(query=query, author=bob, criteria=codes(1, 3)).checklist
    Checklist.objects.create(query=query, author=cid)
    services.perfect_answer_save(checklist=mine, text="Mine: K1 and K2.", by=collaborator)
    services.perfect_answer_save(checklist=bobs, text="Bob's: K1 and K3.", by=bob)
    return {"mine": mine, "bobs": bobs, "bob": bob, "cid": cid}


def test_perfect_answer_page_follows_the_blind_rule(
    client, setup, owner, collaborator, reviewer, outsider
):
    mine, bobs, cid = setup["mine"], setup["bobs"], setup["cid"]
    cases = [
        (owner, mine, 200), (owner, bobs, 200), (reviewer, bobs, 200),
        (collaborator, mine, 200),
        (collaborator, bobs, 404),  # submitted, but the dataset does not show others' work
        (cid, mine, 404), (cid, bobs, 404),  # not submitted: blind
        (outsider, mine, 404),
    ]  # fmt: skip
    for user, checklist, code in cases:
        client.force_login(user)
        response = client.get(reverse("perfect-answer", args=[checklist.pk]))
        assert response.status_code == code, (user.username, checklist.author.username)
    client.force_login(owner)
    page = client.get(reverse("perfect-answer", args=[bobs.pk])).content.decode()
    assert "Bob&#x27;s: K1 and K3." in page and "Written by <strong>bob</strong>" in page

    mine.query.dataset.show_submitted_checklists = True
    mine.query.dataset.save()
    client.force_login(collaborator)
    assert client.get(reverse("perfect-answer", args=[bobs.pk])).status_code == 200
    client.force_login(cid)
    assert client.get(reverse("perfect-answer", args=[bobs.pk])).status_code == 404


def test_only_the_author_or_an_admin_writes(client, setup, owner, collaborator, reviewer):
    mine, bobs = setup["mine"], setup["bobs"]
    url = reverse("perfect-answer", args=[mine.pk])
    client.force_login(reviewer)
    assert client.post(url, {"text": "Reviewer text"}).status_code == 403
    client.force_login(collaborator)
    assert client.post(url, {"text": "Mine, edited: K1, K2."}).status_code == 302
    answer = Answer.objects.get(checklist=mine)
    assert answer.text == "Mine, edited: K1, K2." and answer.author == collaborator
    assert answer.system.is_reference and answer.run_label == f"perfect:{mine.pk}"
    assert client.post(reverse("perfect-answer", args=[bobs.pk]), {"text": "x"}).status_code == 404
    client.force_login(owner)
    assert (
        client.post(reverse("perfect-answer", args=[bobs.pk]), {"text": "Admin fix"}).status_code
        == 302
    )
    assert Answer.objects.get(checklist=bobs).author == owner
    # An empty answer is refused with the field named, and nothing changes.
    response = client.post(url, {"text": "   "})
    assert response.status_code == 400 and "This field is required" in response.content.decode()


def test_a_reopened_checklist_keeps_its_answer_read_only(client, setup, collaborator):
    mine = setup["mine"]
    Checklist.objects.filter(pk=mine.pk).update(status=Checklist.Status.REOPENED)
    client.force_login(collaborator)
    page = client.get(reverse("perfect-answer", args=[mine.pk])).content.decode()
    assert "Submit the checklist again" in page and "Save perfect answer" not in page
    response = client.post(reverse("perfect-answer", args=[mine.pk]), {"text": "New text"})
    assert response.status_code == 400 and "submit the checklist first" in response.content.decode()


def test_preview_is_rendered_and_sanitised(client, setup, collaborator, reviewer):
    url = reverse("perfect-answer-preview", args=[setup["mine"].pk])
    client.force_login(collaborator)
    html = client.post(url, {"text": "**K1** <script>alert(1)</script> [x](javascript:alert(1))"})
    html = html.content.decode()
    assert "<strong>K1</strong>" in html and "<script>" not in html
    assert "&lt;script&gt;" in html and 'href="javascript' not in html
    client.force_login(reviewer)
    assert client.post(url, {"text": "x"}).status_code == 403


def test_perfect_answer_api_follows_the_same_rules(
    setup, owner_api, collaborator_api, reviewer_api, outsider_api
):
    from rest_framework.test import APIClient

    mine, bobs = setup["mine"], setup["bobs"]
    cid_api = APIClient()
    cid_api.force_authenticate(setup["cid"])
    bob_answer = Answer.objects.get(checklist=bobs)
    listed = {
        name: {a["checklist"] for a in api.get("/api/perfect-answers/").json()["results"]}
        for name, api in [("owner", owner_api), ("collab", collaborator_api),
                          ("reviewer", reviewer_api), ("cid", cid_api), ("outsider", outsider_api)]
    }  # fmt: skip
    assert listed == {
        "owner": {mine.pk, bobs.pk}, "collab": {mine.pk}, "reviewer": {mine.pk, bobs.pk},
        "cid": set(), "outsider": set(),
    }  # fmt: skip
    assert collaborator_api.get(f"/api/perfect-answers/{bob_answer.pk}/").status_code == 404
    assert cid_api.get(f"/api/perfect-answers/{bob_answer.pk}/").status_code == 404
    assert reviewer_api.get(f"/api/perfect-answers/{bob_answer.pk}/").json()["author"] == "bob"
    # Perfect answers never leak through the generic answers endpoint.
    assert collaborator_api.get("/api/answers/").json()["results"] == []
    assert collaborator_api.get(f"/api/answers/{bob_answer.pk}/").status_code == 404

    url = f"/api/perfect-answers/{Answer.objects.get(checklist=mine).pk}/"
    assert reviewer_api.patch(url, {"text": "Nope"}).status_code == 403
    assert collaborator_api.patch(url, {"text": "Via the API: K1, K2."}).status_code == 200
    assert Answer.objects.get(checklist=mine).text == "Via the API: K1, K2."
    assert collaborator_api.patch(url, {"text": ""}).json() == {
        "text": ["This field may not be blank."]
    }
    assert (
        collaborator_api.post(
            "/api/perfect-answers/", {"checklist": bobs.pk, "text": "x"}
        ).status_code
        == 404
    )
    assert (
        outsider_api.post("/api/perfect-answers/", {"checklist": mine.pk, "text": "x"}).status_code
        == 404
    )

    # A new submitted checklist gets its first perfect answer through the API.
    other = checklisted_query(
        query=QueryFactory(dataset=mine.query.dataset),
        author=owner_api.handler._force_user,
        criteria=codes(5),
    ).checklist
    created = owner_api.post("/api/perfect-answers/", {"checklist": other.pk, "text": "K5."})
    assert created.status_code == 201 and created.json()["author"] == "owner"
    draft = Checklist.objects.create(query=other.query, author=setup["bob"])
    bob_api = APIClient()
    bob_api.force_authenticate(setup["bob"])
    refused = bob_api.post("/api/perfect-answers/", {"checklist": draft.pk, "text": "K5."})
    assert (
        refused.status_code == 400
        and "submit the checklist first" in refused.json()["checklist"][0]
    )


def test_overlaps_are_for_reviewers_and_admins(
    client,
    setup,
    query,
    owner,
    collaborator,
    reviewer,
    outsider,
    owner_api,
    collaborator_api,
    reviewer_api,
    outsider_api,
):
    dataset = query.dataset
    for user, code in ((owner, 200), (reviewer, 200), (collaborator, 403), (outsider, 404)):
        client.force_login(user)
        assert client.get(reverse("query-overlaps", args=[query.pk])).status_code == code
        assert (
            client.get(reverse("dataset-cross-evaluation", args=[dataset.pk])).status_code == code
        )
    for api, code in (
        (owner_api, 200),
        (reviewer_api, 200),
        (collaborator_api, 403),
        (outsider_api, 404),
    ):
        assert api.get("/api/overlaps/", {"query": query.pk}).status_code == code
        assert api.get("/api/overlaps/", {"dataset": dataset.pk}).status_code == code
    assert owner_api.get("/api/overlaps/").status_code == 400
    assert (
        owner_api.get("/api/overlaps/", {"query": query.pk, "source": "bogus"}).status_code == 400
    )
    # Reviewers read; only admins start or change settings.
    client.force_login(reviewer)
    url = reverse("dataset-cross-evaluation", args=[dataset.pk])
    assert client.post(url, {"action": "settings", "automatic": "on"}).status_code == 403
    assert client.post(reverse("query-cross-evaluation-start", args=[query.pk])).status_code == 403


def _grow(dataset, owner, queries: int, experts: int) -> None:
    people = [expert(dataset, f"expert{i}") for i in range(experts)]
    for q in range(queries):
        query = QueryFactory(dataset=dataset)
        for i, person in enumerate(people):
            checklist = checklisted_query(
                query=query, author=person, criteria=codes(*range(q * 10 + i, q * 10 + i + 5))
            ).checklist
            services.perfect_answer_save(checklist=checklist, text=f"K{q * 10 + i}", by=owner)


@pytest.mark.parametrize("queries", [2, 8])
def test_cross_evaluation_pages_stay_flat(
    client, dataset, owner, queries, django_assert_max_num_queries
):
    _grow(dataset, owner, queries=queries, experts=4)
    grade_directly(dataset, lambda a, c: "pass" if (a.pk + c.pk) % 3 else "fail")
    client.force_login(owner)
    # A cache miss: the counts (on PostgreSQL in a transaction of their own with its planner
    # settings, 5 statements more) and the figure cache's write.
    with django_assert_max_num_queries(30):
        page = client.get(reverse("dataset-cross-evaluation", args=[dataset.pk]))
    assert page.status_code == 200
    assert f"{queries * 12}</strong> ordered pairs" in page.content.decode()
    query = dataset.queries.first()
    with django_assert_max_num_queries(25):
        assert client.get(reverse("query-overlaps", args=[query.pk])).status_code == 200
    checklist = Checklist.objects.filter(query=query).first()
    with django_assert_max_num_queries(25):
        response = client.get(
            reverse("query-overlaps", args=[query.pk]),
            {"a": checklist.pk, "b": checklist.pk},
        )
    assert response.status_code == 200 and "self-check" in response.content.decode()


def test_overlaps_csv_download_by_role(client, dataset, owner, reviewer, collaborator, outsider):
    from annotation import roles
    from annotation import services as annotation_services

    annotation_services.dataset_set_role(
        dataset=dataset, user=reviewer, role=roles.DatasetRole.REVIEWER
    )
    url = reverse("dataset-overlaps-csv", args=[dataset.pk])
    for user, code in ((owner, 200), (reviewer, 200), (collaborator, 403), (outsider, 404)):
        client.force_login(user)
        assert client.get(url).status_code == code, user.username
    client.force_login(owner)
    assert client.get(url).content.decode().startswith("dataset,query,a_checklist")
