"""The checklist API: one request creates a whole checklist; validation names rule and field;
permissions are the pages' permissions."""

from __future__ import annotations

import pytest

from annotation import services
from annotation.models import Checklist, Criterion
from tests.factories import valid_criteria

pytestmark = pytest.mark.django_db


def payload(query, **extra) -> dict:
    return {
        "query": query.pk,
        "criteria": [
            {
                "text": "Uses the Q3 FY2026 earnings call as the primary source.",
                "kind": "methodology",
            },
            {
                "text": "States Q3 revenue of $4.12 billion.",
                "kind": "fact",
                "source_types": ["earnings-release"],
                "citations": [
                    {
                        "title": "Q3 FY2026 earnings release",
                        "url": "https://example.com/q3",
                        "source_type": "earnings-release",
                        "published_on": "2026-09-28",
                    }
                ],
            },
            {"text": "Reports a Q3 gross margin of 61.5%.", "source_types": ["earnings-release"]},
            {
                "text": "Mentions the Q4 guidance of $4.3 billion.",
                "source_types": ["earnings-call-transcript"],
            },
            {
                "text": "Explains what drove the Q3 revenue beat.",
                "source_types": ["earnings-call-transcript"],
            },
            {"text": "Presents guidance versus actuals in a table.", "kind": "format"},
        ],
        **extra,
    }


def test_one_request_creates_and_submits_a_checklist(collaborator_api, query):
    response = collaborator_api.post("/api/checklists/", payload(query, submit=True))
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == "submitted"
    assert [c["position"] for c in body["criteria"]] == [1, 2, 3, 4, 5, 6]
    assert body["criteria"][1]["citations"][0]["published_on"] == "2026-09-28"
    assert body["validation"]["blocking"] is False


def test_submit_refusal_names_rule_and_field_and_saves_nothing(collaborator_api, query):
    data = payload(query, submit=True)
    data["criteria"][2]["text"] = "Gross margin of 61.5%."
    data["criteria"][1]["citations"][0]["published_on"] = "2027-01-15"
    response = collaborator_api.post("/api/checklists/", data)
    assert response.status_code == 400
    errors = {(e["rule"], e["field"]) for e in response.json()["errors"]}
    assert ("action-verb", "criteria[2].text") in errors
    assert ("citation-after-query-date", "criteria[1].citations[0].published_on") in errors
    assert not Checklist.objects.exists()


def test_drafts_save_with_errors_and_report_them(collaborator_api, query):
    data = payload(query)
    data["criteria"][0]["kind"] = "fact"  # no methodology left, and a fact without source
    response = collaborator_api.post("/api/checklists/", data)
    assert response.status_code == 201
    rules = {e["rule"] for e in response.json()["validation"]["errors"]}
    assert {"methodology-required", "fact-source-type"} <= rules
    submit = collaborator_api.post(f"/api/checklists/{response.json()['id']}/submit/")
    assert submit.status_code == 400
    body = submit.json()
    assert "methodology-required" in {e["rule"] for e in body["errors"]}
    assert body["blocking"] is True  # JSON types survive (not "True")
    assert any(e["criterion"] is None for e in body["errors"])  # checklist-level: null


def test_dry_run_validates_without_saving(collaborator_api, query):
    data = payload(query)
    data["criteria"][3]["source_types"] = ["ai-tools"]
    response = collaborator_api.post("/api/checklists/validate/", data)
    assert response.status_code == 200
    body = response.json()
    assert body["blocking"] is True
    assert [(e["rule"], e["field"]) for e in body["errors"]] == [
        ("banned-source-type", "criteria[3].source_types[0]")
    ]
    assert not Checklist.objects.exists()


def test_structural_errors_name_the_field(collaborator_api, query):
    data = payload(query)
    data["criteria"][1]["kind"] = "opinion"
    data["criteria"][2]["source_types"] = ["crystal-ball"]
    response = collaborator_api.post("/api/checklists/", data)
    assert response.status_code == 400
    errors = response.json()["criteria"]  # keyed by the index of the criterion in the list
    assert set(errors) == {"1", "2"}
    assert "kind" in errors["1"] and "source_types" in errors["2"]
    assert not Checklist.objects.exists()


def test_criterion_endpoint_saves_and_returns_its_validation(collaborator_api, collaborator, query):
    checklist = services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria()
    )
    created = collaborator_api.post(
        "/api/criteria/",
        {"checklist": checklist.pk, "text": "The margin went up", "kind": "fact"},
    )
    assert created.status_code == 201
    rules = {e["rule"] for e in created.json()["validation"]["errors"]}
    assert {"action-verb", "fact-source-type"} <= rules
    fixed = collaborator_api.patch(
        f"/api/criteria/{created.json()['id']}/",
        {"text": "States that the Q3 margin went up.", "source_types": ["earnings-release"]},
    )
    assert fixed.status_code == 200
    assert fixed.json()["validation"]["errors"] == []
    assert collaborator_api.delete(f"/api/criteria/{created.json()['id']}/").status_code == 204


def test_only_the_author_edits_and_only_until_submitted(
    owner_api, collaborator_api, outsider_api, collaborator, query
):
    checklist = services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria()
    )
    criterion = checklist.criteria.first()
    url = f"/api/criteria/{criterion.pk}/"
    assert outsider_api.patch(url, {"text": "Mine."}).status_code == 404
    assert owner_api.patch(url, {"text": "Mine."}).status_code == 403  # admin reads, not edits
    assert owner_api.get(url).status_code == 200
    assert collaborator_api.post(f"/api/checklists/{checklist.pk}/submit/").status_code == 200
    assert collaborator_api.patch(url, {"text": "States more."}).status_code == 409
    assert collaborator_api.post(f"/api/checklists/{checklist.pk}/reopen/").status_code == 200
    assert collaborator_api.patch(url, {"text": "States more."}).status_code == 200


def test_outsider_gets_404_everywhere(outsider_api, collaborator, query):
    checklist = services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria()
    )
    criterion = checklist.criteria.first()
    for url in (
        f"/api/checklists/{checklist.pk}/",
        f"/api/checklists/{checklist.pk}/validation/",
        f"/api/criteria/{criterion.pk}/",
        f"/api/queries/{query.pk}/",
    ):
        assert outsider_api.get(url).status_code == 404, url
    assert outsider_api.post(f"/api/checklists/{checklist.pk}/submit/").status_code == 404
    assert outsider_api.post("/api/checklists/", payload(query)).status_code == 404
    assert outsider_api.post("/api/checklists/validate/", payload(query)).status_code == 404
    assert (
        outsider_api.post(
            "/api/criteria/", {"checklist": checklist.pk, "text": "States x."}
        ).status_code
        == 404
    )
    assert outsider_api.get("/api/checklists/").json()["results"] == []
    assert outsider_api.get("/api/criteria/").json()["results"] == []
    assert Criterion.objects.count() == 6


def test_assigned_experts_only(collaborator_api, owner, query, dataset):
    from tests.factories import UserFactory

    other = UserFactory(username="assigned-one")
    from annotation import roles

    services.dataset_set_role(dataset=dataset, user=other, role=roles.DatasetRole.EXPERT)
    services.query_assign_experts(query=query, experts=[other])
    response = collaborator_api.post("/api/checklists/", payload(query))
    assert response.status_code == 403


def test_queries_are_created_by_dataset_admins(owner_api, collaborator_api, dataset):
    # With experts_create_queries off; tests/annotation/test_expert_queries.py has it on.
    dataset.experts_create_queries = False
    dataset.save()
    data = {
        "dataset": dataset.pk,
        "text": "What was Harbor's FY2025 margin?",
        "query_date": "2026-03-01",
        "category": "Point-fact retrieval",
        "tags": ["logistics", "margins"],
    }
    assert collaborator_api.post("/api/queries/", data).status_code == 403
    created = owner_api.post("/api/queries/", data)
    assert created.status_code == 201, created.json()
    fetched = owner_api.get(f"/api/queries/{created.json()['id']}/").json()
    assert sorted(fetched["tags"]) == ["logistics", "margins"]
    assert fetched["category"] == "Point-fact retrieval"
    bad = owner_api.post("/api/queries/", {**data, "category": "Astrology"})
    assert bad.status_code == 400 and "category" in bad.json()
    url = f"/api/queries/{created.json()['id']}/"
    assert collaborator_api.patch(url, {"tags": ["mine"]}).status_code == 403
    patched = owner_api.patch(url, {"tags": ["margins"], "query_date": "2026-03-02"})
    assert patched.status_code == 200
    assert (patched.json()["tags"], patched.json()["query_date"]) == (["margins"], "2026-03-02")


def test_source_types_and_guidelines_are_listed(collaborator_api):
    slugs = {s["slug"]: s for s in collaborator_api.get("/api/source-types/").json()["results"]}
    assert slugs["ai-tools"]["is_banned"] is True
    assert "earnings-call-transcript" in slugs
    guidelines = collaborator_api.get("/api/guidelines/").json()["results"]
    assert [(g["name"], g["version"]) for g in guidelines] == [("Finance", 1)]


def test_checklist_list_query_count_is_flat(
    collaborator_api, collaborator, dataset, django_assert_max_num_queries
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tests.factories import QueryFactory

    def add(n: int) -> None:
        for _ in range(n):
            services.checklist_create_with_criteria(
                query=QueryFactory(dataset=dataset), by=collaborator, criteria=valid_criteria()
            )

    def queries_for_list() -> int:
        with CaptureQueriesContext(connection) as ctx:
            collaborator_api.get("/api/checklists/")
        return len(ctx.captured_queries)

    add(2)
    queries_for_list()  # warm per-process caches
    few = queries_for_list()
    add(8)
    assert queries_for_list() == few
    with django_assert_max_num_queries(14):
        response = collaborator_api.get("/api/checklists/")
    assert len(response.json()["results"]) == 10
