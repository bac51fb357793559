"""A run that cannot work is refused at start, with the judge and the reason named, and
nothing is kept or queued: keys, external judges, unreachable endpoints, no answers."""

from __future__ import annotations

import socket

import pytest
from django.urls import reverse

from annotation import services
from evaluation.judges.models import Judge
from evaluation.runs import services as runs
from evaluation.runs.models import Run, RunTask
from tests.factories import (
    AnswerFactory,
    PanelFactory,
    external_judges,
    offline_judge,
    valid_criteria,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def answered(dataset, query, collaborator):
    services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria(), submit=True
    )
    return AnswerFactory(query=query, run_label="nightly-2026-11-21")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once it is closed


def refused(owner_api, dataset, panel, **extra) -> dict:
    response = owner_api.post("/api/runs/", {"dataset": dataset.pk, "panel": panel.pk, **extra})
    assert response.status_code == 400, response.content
    assert not Run.objects.exists() and not RunTask.objects.exists()
    return response.json()


def test_a_missing_key_is_refused_by_judge_and_variable(
    owner_api, client, owner, dataset, answered, loopback_openai, monkeypatch
):
    monkeypatch.delenv("JUDGE_KEY_WB_PREFLIGHT", raising=False)
    judge = Judge.objects.create(
        name="GPT",
        base_url=loopback_openai.base_url,
        model="m",
        api_key_env="JUDGE_KEY_WB_PREFLIGHT",
    )
    panel = PanelFactory(judges=[judge, offline_judge("Checks")])
    message = "Judge “GPT”: its API key variable JUDGE_KEY_WB_PREFLIGHT is not set on this server."
    assert refused(owner_api, dataset, panel) == {"panel": [message]}
    client.force_login(owner)
    page = client.post(
        reverse("dataset-runs", args=[dataset.pk]), {"panel": panel.pk, "concurrency": 4}
    )
    assert page.status_code == 200 and message in page.content.decode()
    assert not Run.objects.exists()


def test_a_variable_judges_may_not_read_is_named_as_such_not_as_unset(
    owner_api, dataset, answered, loopback_openai, monkeypatch
):
    """A judge saved before keys were restricted may name SECRET_KEY: it is set, so "not
    set" would send the admin looking in the wrong place."""
    monkeypatch.setenv("SECRET_KEY", "the project's own secret")
    judge = Judge.objects.create(
        name="Old", base_url=loopback_openai.base_url, model="m", api_key_env="SECRET_KEY"
    )
    (message,) = refused(owner_api, dataset, PanelFactory(judges=[judge]))["panel"]
    assert message == (
        "Judge “Old”: SECRET_KEY may not hold a judge key; name a JUDGE_KEY_* variable (or one "
        "JUDGE_KEY_VARIABLES lists) instead."
    )
    assert "the project's own secret" not in message


def test_an_external_judge_is_refused(owner_api, dataset, answered):
    panel = PanelFactory(judges=[Judge.objects.create(name="Imported", kind=Judge.Kind.EXTERNAL)])
    assert refused(owner_api, dataset, panel)["panel"] == [
        "Judge “Imported” is external (imported verdicts): it is never called, so it cannot grade."
    ]


def test_an_unreachable_endpoint_is_refused(owner_api, dataset, answered):
    port = closed_port()
    judge = Judge.objects.create(name="Local", base_url=f"http://127.0.0.1:{port}/v1", model="m")
    assert refused(owner_api, dataset, PanelFactory(judges=[judge]))["panel"] == [
        f"Judge “Local”: cannot reach 127.0.0.1:{port} (connection refused)."
    ]


def test_the_reachability_check_can_be_turned_off(owner_api, dataset, answered, settings):
    settings.RUNS_PREFLIGHT_CONNECT = False
    judge = Judge.objects.create(
        name="Far", base_url=f"http://127.0.0.1:{closed_port()}/v1", model="m"
    )
    response = owner_api.post(
        "/api/runs/", {"dataset": dataset.pk, "panel": PanelFactory(judges=[judge]).pk}
    )
    assert response.status_code == 201


def test_a_run_matching_no_answers_names_what_it_asked_for(owner_api, dataset, answered):
    panel = PanelFactory(judges=[offline_judge("Checks")])
    errors = refused(owner_api, dataset, panel, answer_run_label="nightly-2026-11-12")
    assert errors == {
        "non_field_errors": [
            f"No answers match dataset “{dataset.name}”; run label “nightly-2026-11-12”. "
            "Run labels in this dataset: nightly-2026-11-21."
        ]
    }


def test_answers_without_a_checklist_to_grade_are_refused(owner_api, dataset, query):
    AnswerFactory(query=query)
    panel = PanelFactory(judges=[offline_judge("Checks")])
    assert "no submitted checklist" in refused(owner_api, dataset, panel)["non_field_errors"][0]


def test_the_panel_is_checked_again_on_resume(dataset, answered, loopback_openai, monkeypatch):
    monkeypatch.setenv("JUDGE_KEY_WB_PREFLIGHT", "sk-test")
    judge = Judge.objects.create(
        name="GPT",
        base_url=loopback_openai.base_url,
        model="m",
        api_key_env="JUDGE_KEY_WB_PREFLIGHT",
    )
    run = runs.run_cancel(
        run=runs.run_start(run=runs.run_create(dataset=dataset, panel=PanelFactory(judges=[judge])))
    )
    monkeypatch.delenv("JUDGE_KEY_WB_PREFLIGHT")
    with pytest.raises(runs.RunRefused, match="JUDGE_KEY_WB_PREFLIGHT"):
        runs.run_resume(run=run)
    run.refresh_from_db()
    assert (run.status, run.attempt) == (Run.Status.CANCELLED, 1)


def test_imported_runs_are_never_run_and_keep_their_error_verdicts(owner_api, dataset):
    from evaluation.runs.models import Verdict
    from tests.support.builders import checklisted_query, finished_run

    made = checklisted_query(dataset, criteria=2, answers=1)
    panel = PanelFactory(judges=external_judges(3))
    run = finished_run(dataset, panel, {(made.answers[0], made.criteria[0]): ["error"] * 3})
    for action in ("resume", "retry-failed", "cancel"):
        assert owner_api.post(f"/api/runs/{run.pk}/{action}/").status_code == 409
    assert Verdict.objects.filter(run=run, outcome="error").count() == 3
