"""`GET /api/datasets/{id}/side-by-side/`: the page's comparison for programs, paged, in
the published schema; bad input a 400 naming the field; a page past the last a 404; the
page's access."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from evaluation.side_by_side import api
from tests.support.side_by_side import build_two_runs

pytestmark = pytest.mark.django_db


def api_client(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def endpoint(data) -> str:
    return reverse("api-evaluation:side-by-side", args=[data.dataset.pk])


def sides(data) -> dict:
    return {"a": data.run_a.pk, "system_a": data.old.pk, "b": data.run_b.pk,
            "system_b": data.new.pk}  # fmt: skip


def test_the_comparison_differing_criteria_first(reviewer, two_runs):
    data = two_runs
    response = api_client(reviewer).get(endpoint(data), {**sides(data), "sort": "query"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["a"] == {"run": data.run_a.pk, "system": data.old.pk, "system_name": "Old 1"}
    assert (body["paired"], body["only_a"], body["only_b"], body["count"]) == (3, 0, 0, 3)
    first = body["pairs"][0]
    assert first["query"] == data.queries[0].pk
    assert first["answer_a"] == data.old_answers[0].pk
    assert first["answer_b"] == data.new_answers[0].pk
    assert [c["difference"] for c in first["criteria"]] == ["a_meets", "a_meets", "b_meets",
                                                            "same"]  # fmt: skip
    penalty = first["criteria"][1]
    assert (penalty["outcome_a"], penalty["outcome_b"], penalty["weight"]) == ("fail", "pass", -1)
    assert first["differing"] == 3
    assert first["difference"] == pytest.approx(first["score_b"] - first["score_a"])
    assert first["checklists"][0]["a"]["value"] == first["score_a"]
    third = body["pairs"][2]
    assert third["undecided_b"] == 1
    assert "undecided" in [c["outcome_b"] for c in third["criteria"]]
    assert body["next"] is None and body["previous"] is None and body["updating"] is False


def test_pages_and_past_the_last(reviewer, reviewed_dataset, monkeypatch):
    data = build_two_runs(reviewed_dataset, queries=4)
    monkeypatch.setattr(api, "API_PAIRS_PER_PAGE", 3)
    client = api_client(reviewer)
    first = client.get(endpoint(data), sides(data)).json()
    assert len(first["pairs"]) == 3 and first["count"] == 4 and "page=2" in first["next"]
    second = client.get(first["next"]).json()
    assert len(second["pairs"]) == 1 and second["previous"] is not None
    assert client.get(endpoint(data), {**sides(data), "page": 3}).status_code == 404
    assert client.get(endpoint(data), {**sides(data), "page": "x"}).status_code == 404


def test_bad_input_names_the_field(reviewer, two_runs):
    data = two_runs
    client = api_client(reviewer)
    response = client.get(endpoint(data), {**sides(data), "b": 999999})
    assert response.status_code == 400
    assert response.json()["b"] == ["No run 999999 of system answers in this dataset."]
    response = client.get(endpoint(data), {**sides(data), "min_difference": "lots"})
    assert response.status_code == 400 and "min_difference" in response.json()


def test_filters_as_the_page(reviewer, two_runs):
    data = two_runs
    body = (
        api_client(reviewer)
        .get(
            endpoint(data), {**sides(data), "dimension": "answer_type=text", "min_difference": 0.01}
        )
        .json()
    )
    assert [p["query"] for p in body["pairs"]] == [data.queries[2].pk]


def test_no_run_yet_is_a_400(reviewer, reviewed_dataset):
    response = api_client(reviewer).get(
        reverse("api-evaluation:side-by-side", args=[reviewed_dataset.pk])
    )
    assert response.status_code == 400
    assert "No run of system answers" in str(response.json())


def test_in_the_schema(client, reviewer):
    client.force_login(reviewer)
    schema = client.get("/api/schema/?format=json").json()
    operation = schema["paths"]["/api/datasets/{id}/side-by-side/"]["get"]
    names = {p["name"] for p in operation["parameters"]}
    assert {"a", "b", "system_a", "system_b", "min_difference", "category", "dimension",
            "sort", "page"} <= names  # fmt: skip


def test_queries_do_not_grow_with_the_page(reviewer, reviewed_dataset,
                                           django_assert_max_num_queries):  # fmt: skip
    data = build_two_runs(reviewed_dataset, queries=12)
    client = api_client(reviewer)
    client.get(endpoint(data), sides(data))  # the runs' scores kept by the first request
    with django_assert_max_num_queries(19):
        # Four pairs differ by more than 0.5 (every third query).
        assert len(client.get(endpoint(data), {**sides(data), "min_difference": 0.5}).json()[
            "pairs"]) == 4  # fmt: skip
    with django_assert_max_num_queries(19):
        assert len(client.get(endpoint(data), sides(data)).json()["pairs"]) == 10


def test_a_run_whose_scores_are_being_counted_is_a_202_on_the_api_and_a_notice_on_the_page(
    reviewer, two_runs, settings, client
):
    """Right after seeding or a release that changes how scores are kept, the runs' scores
    are cold: they are counted in the background (evaluation.kept.cold), and the comparison
    waits for them instead of refusing the asker ("has scored no answer yet", a 400)."""
    from evaluation.kept.models import KeptFigure, KeptRefresh
    from evaluation.runs import scores

    settings.FIGURES_COLD_IN_REQUEST = False
    data = two_runs
    KeptFigure.objects.filter(kind=scores.readers.RUN_SCORES.kind).delete()
    response = api_client(reviewer).get(endpoint(data), sides(data))
    assert response.status_code == 202, response.content
    assert response["Retry-After"] == "5"
    assert response.json() == {"updating": True, "computed_at": None, "refresh_failed": None}
    assert KeptRefresh.objects.filter(run_id=data.run_a.pk).exists()

    client.force_login(reviewer)
    page = client.get(reverse("dataset-side-by-side", args=[data.dataset.pk]), sides(data))
    assert page.status_code == 200
    body = page.content.decode()
    assert "data-errors" not in body, body[body.find("data-errors") - 200 :][:600]
    assert "data-computing" in body and "Computing." in body

    # Counted (as the refresh task would): the comparison is served.
    for run in (data.run_a, data.run_b):
        scores.keep_scores(run)
    assert api_client(reviewer).get(endpoint(data), sides(data)).status_code == 200
