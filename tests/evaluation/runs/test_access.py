"""Who sees and manages runs and verdicts: the dataset's admins manage, its reviewers read,
its experts (possibly still annotating blind) and outsiders do not see them."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import roles, services
from evaluation.judges.models import Judge, Panel
from evaluation.runs import lifecycle
from evaluation.runs import services as runs
from evaluation.runs.models import Verdict
from tests.factories import AnswerFactory, PanelFactory, UserFactory, valid_criteria

pytestmark = pytest.mark.django_db


@pytest.fixture
def reviewer(dataset):
    user = UserFactory(username="reviewer")
    services.dataset_set_role(dataset=dataset, user=user, role=roles.DatasetRole.REVIEWER)
    return user


@pytest.fixture
def run(dataset, query, collaborator, offline_panel, owner):
    services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria(), submit=True
    )
    AnswerFactory(query=query, text="Revenue was $4.12 billion; margin 61.5%.")
    run = runs.run_create(dataset=dataset, panel=offline_panel, by=owner)
    run = runs.run_start(run=run)
    answer = run.dataset.queries.get().answers.get()
    lifecycle.run_task(
        worker="test", run_id=run.pk, answer_id=answer.pk, judge_id=offline_panel.judges.get().pk
    )
    run.refresh_from_db()
    return run


def test_the_offline_judge_grades_a_run_without_any_llm(run):
    assert run.status == "done"
    verdicts = Verdict.objects.filter(run=run)
    assert verdicts.count() == run.expected == 6
    assert all(v.rationale.startswith("No-LLM check") for v in verdicts)
    assert all(v.judge_params == {"kind": "no_llm"} for v in verdicts)
    assert verdicts.filter(outcome="pass").exists() and verdicts.filter(outcome="fail").exists()


def test_run_page_by_role(client, run, owner, reviewer, collaborator, outsider):
    url = reverse("run-detail", args=[run.pk])
    for user, code in ((owner, 200), (reviewer, 200), (collaborator, 403), (outsider, 404)):
        client.force_login(user)
        assert client.get(url).status_code == code, user.username
    client.force_login(owner)
    page = client.get(url).content.decode()
    assert "6 / 6 verdicts" in page.replace("</strong>", "") and "Scores" in page


def test_run_api_by_role(run, owner_api, collaborator_api, outsider_api, reviewer):
    from rest_framework.test import APIClient

    reviewer_api = APIClient()
    reviewer_api.force_authenticate(reviewer)
    assert owner_api.get(f"/api/runs/{run.pk}/progress/").json()["done"] == 6
    assert reviewer_api.get(f"/api/runs/{run.pk}/").status_code == 200
    assert len(reviewer_api.get("/api/verdicts/", {"run": run.pk}).json()["results"]) == 6
    assert reviewer_api.post(f"/api/runs/{run.pk}/cancel/").status_code == 403
    assert collaborator_api.get(f"/api/runs/{run.pk}/").status_code == 403
    assert collaborator_api.get("/api/verdicts/").json()["results"] == []
    assert outsider_api.get(f"/api/runs/{run.pk}/").status_code == 404
    verdict = Verdict.objects.filter(run=run).first()
    assert outsider_api.get(f"/api/verdicts/{verdict.pk}/").status_code == 404
    assert outsider_api.get("/api/runs/").json()["results"] == []


def test_only_dataset_admins_start_runs(
    owner_api, collaborator_api, dataset, offline_panel, query, collaborator
):
    services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria(), submit=True
    )
    AnswerFactory(query=query)
    data = {"dataset": dataset.pk, "panel": offline_panel.pk}
    assert collaborator_api.post("/api/runs/", data).status_code == 403
    created = owner_api.post("/api/runs/", data)
    assert created.status_code == 201
    assert created.json()["status"] == "running"


def test_judges_and_panels_are_managed_by_the_admin_group(owner_api, collaborator_api):
    data = {"name": "GPT", "base_url": "http://127.0.0.1:9/v1", "model": "gpt-4o-mini"}
    assert collaborator_api.post("/api/judges/", data).status_code == 403
    assert owner_api.post("/api/judges/", data).status_code == 201
    missing = owner_api.post("/api/judges/", {"name": "No model", "base_url": data["base_url"]})
    assert missing.status_code == 400 and "model" in missing.json()
    assert (
        owner_api.post("/api/judges/", {**data, "name": "Zero", "rpm_limit": 0}).status_code == 400
    )
    assert collaborator_api.get("/api/judges/").status_code == 200


def test_start_run_page(client, owner, dataset, offline_panel, query, collaborator):
    services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria(), submit=True
    )
    AnswerFactory(query=query)
    client.force_login(owner)
    url = reverse("dataset-runs", args=[dataset.pk])
    response = client.post(url, {"panel": offline_panel.pk, "concurrency": 4, "name": "Nightly"})
    assert response.status_code == 302
    run = dataset.runs.get()
    assert (run.name, run.expected, run.status) == ("Nightly", 6, "running")
    client.force_login(collaborator)
    assert client.get(url).status_code == 403


def test_start_run_page_for_chosen_queries(client, owner, dataset, offline_panel, collaborator):
    from tests.factories import QueryFactory

    chosen, other = QueryFactory(dataset=dataset), QueryFactory(dataset=dataset)
    for query in (chosen, other):
        services.checklist_create_with_criteria(
            query=query, by=collaborator, criteria=valid_criteria(), submit=True
        )
        AnswerFactory(query=query)
    foreign = QueryFactory(dataset=services.dataset_create(name="Elsewhere", by=owner))
    client.force_login(owner)
    url = reverse("dataset-runs", args=[dataset.pk])
    page = client.get(url).content.decode()
    assert f"#{chosen.pk} " in page and f"#{foreign.pk} " not in page
    refused = client.post(
        url, {"panel": offline_panel.pk, "concurrency": 4, "queries": [foreign.pk]}
    )
    assert refused.status_code == 200 and "queries" in refused.context["form"].errors
    assert not dataset.runs.exists()
    response = client.post(
        url, {"panel": offline_panel.pk, "concurrency": 4, "queries": [chosen.pk]}
    )
    assert response.status_code == 302
    run = dataset.runs.get()
    assert list(run.queries.all()) == [chosen]
    assert run.expected == 6  # the chosen query's one answer × six criteria, not twelve


def test_bad_panels_are_refused_whole(owner_api):

    judge = Judge.objects.create(name="J", base_url="http://127.0.0.1:9/v1", model="m")
    twice = {"name": "Twice", "members": [{"judge": judge.pk}, {"judge": judge.pk}]}
    assert owner_api.post("/api/panels/", twice, format="json").status_code == 400
    empty = owner_api.post("/api/panels/", {"name": "Empty", "members": []}, format="json")
    assert empty.status_code == 400 and "members" in empty.json()
    high = {"name": "High", "threshold": 1.5, "members": [{"judge": judge.pk}]}
    assert "threshold" in owner_api.post("/api/panels/", high, format="json").json()
    zero = {"name": "Zero", "members": [{"judge": judge.pk, "samples": 0}]}
    assert owner_api.post("/api/panels/", zero, format="json").status_code == 400
    assert not Panel.objects.exists()


def test_a_run_that_cannot_start_is_not_kept(owner_api, client, owner, dataset):
    from evaluation.runs.models import Run

    panel = PanelFactory(name="No judges")
    response = owner_api.post("/api/runs/", {"dataset": dataset.pk, "panel": panel.pk})
    assert response.status_code == 400 and "panel" in response.json()
    client.force_login(owner)
    page = client.post(
        reverse("dataset-runs", args=[dataset.pk]), {"panel": panel.pk, "concurrency": 4}
    )
    assert page.status_code == 200 and "The panel has no judges." in page.content.decode()
    assert not Run.objects.exists()
    assert client.post(reverse("run-action", args=[1, "explode"])).status_code == 404


def test_reviewers_find_runs_from_the_dataset_page(client, reviewer, dataset):
    client.force_login(reviewer)
    page = client.get(reverse("dataset-detail", args=[dataset.pk])).content.decode()
    assert reverse("dataset-runs", args=[dataset.pk]) in page


def test_polling_reloads_the_page_once_the_run_has_ended(client, owner, run):
    client.force_login(owner)
    url = reverse("run-detail", args=[run.pk])
    polled = client.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="run-progress")
    assert polled.headers.get("HX-Refresh") == "true"  # done: reload for status and scores
    page = client.get(url).content.decode()
    assert "No verdict yet" not in page and 'hx-trigger="every 2s"' not in page


def test_answer_page_shows_sanitised_answer_beside_votes(client, owner, reviewer, outsider, run):
    answer = run.dataset.queries.get().answers.get()
    answer.text = (
        "**Revenue** was $4.12 billion.\n\n<script>alert(1)</script> [x](javascript:alert(1))"
    )
    answer.save()
    url = reverse("run-answer", args=[run.pk, answer.pk])
    client.force_login(reviewer)
    page = client.get(url).content.decode()
    assert "<strong>Revenue</strong>" in page
    assert "<script>alert(1)</script>" not in page and 'href="javascript:' not in page
    assert page.count('class="verdict-row') == 6
    assert "No-LLM check" in page and "Checklist by collaborator" in page
    client.force_login(outsider)
    assert client.get(url).status_code == 404


def test_answer_page_query_count_is_flat(client, owner, run, django_assert_max_num_queries):
    answer = run.dataset.queries.get().answers.get()
    client.force_login(owner)
    with django_assert_max_num_queries(12):
        assert client.get(reverse("run-answer", args=[run.pk, answer.pk])).status_code == 200


def test_an_answer_of_another_dataset_is_not_found(client, owner, run):
    other = AnswerFactory()  # its query is in a dataset of its own
    client.force_login(owner)
    assert client.get(reverse("run-answer", args=[run.pk, other.pk])).status_code == 404
