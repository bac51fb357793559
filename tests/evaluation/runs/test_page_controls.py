"""The run page shows only the actions its status allows, why a run failed or what its
errors were, and each failed call on the answer's page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluation.judges.models import Judge
from evaluation.runs import lifecycle
from evaluation.runs import services as runs
from evaluation.runs.models import Run
from tests.evaluation.runs.workload import build_workload, scripted_judge
from tests.factories import PanelFactory, loopback_judges

pytestmark = pytest.mark.django_db

VARIABLE = "JUDGE_KEY_WB_RUN_PAGE"


def page(client, run: Run) -> str:
    return client.get(reverse("run-detail", args=[run.pk])).content.decode()


def buttons(html: str) -> set[str]:
    return {a for a in ("cancel", "resume", "retry-failed") if f"/{a}/" in html}


def deliver_all(run: Run) -> None:
    for answer_id, judge_id in run.tasks.values_list("answer_id", "judge_id"):
        lifecycle.run_task(run_id=run.pk, answer_id=answer_id, judge_id=judge_id, worker="t")


@pytest.fixture
def keyless_run(dataset, loopback_openai, monkeypatch):
    """A run whose second judge's key is set where it starts and missing where it runs."""
    loopback_openai.responder = scripted_judge
    build_workload(dataset, queries=1, answers_per_query=2, criteria=3)
    panel = PanelFactory(judges=loopback_judges(loopback_openai, 2))
    Judge.objects.filter(name="Judge 1").update(api_key_env=VARIABLE)
    monkeypatch.setenv(VARIABLE, "sk-test")
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=panel))
    monkeypatch.delenv(VARIABLE)
    return run


def test_actions_follow_the_status(
    client, owner, reviewer, keyless_run, reviewed_dataset, monkeypatch
):
    run = keyless_run
    client.force_login(owner)
    html = page(client, run)
    assert buttons(html) == {"cancel"} and 'data-status="running"' in html
    assert "still running: these scores cover the verdicts collected so far" in html

    run = runs.run_cancel(run=run)
    assert buttons(page(client, run)) == {"resume"}

    monkeypatch.setenv(VARIABLE, "sk-test")  # resume checks the key again
    run = runs.run_resume(run=run)
    monkeypatch.delenv(VARIABLE)
    deliver_all(run)
    run.refresh_from_db()
    assert run.status == Run.Status.DONE_WITH_ERRORS
    html = page(client, run)
    assert buttons(html) == {"retry-failed"}
    assert "Done with errors" in html and "data-reason" in html and VARIABLE in html
    errors = html.split("data-errors", 1)[1].split("</table>", 1)[0]
    assert "missing_key" in errors and ">6<" in errors  # 2 answers × 3 criteria, one judge
    assert "leave out the calls that did not return a verdict" in html

    # Reviewers see the run, never its controls.
    client.force_login(reviewer)
    assert buttons(page(client, run)) == set()


def test_an_action_the_status_refuses_says_why(client, owner, keyless_run):
    client.force_login(owner)
    response = client.post(
        reverse("run-action", args=[keyless_run.pk, "retry-failed"]), follow=True
    )
    assert "still running" in response.content.decode()
    keyless_run.refresh_from_db()
    assert keyless_run.attempt == 1


def test_the_answer_page_shows_each_failed_call(client, owner, keyless_run):
    deliver_all(keyless_run)
    answer_id = keyless_run.tasks.values_list("answer_id", flat=True).first()
    client.force_login(owner)
    html = client.get(reverse("run-answer", args=[keyless_run.pk, answer_id])).content.decode()
    assert html.count("data-call-error") == 3
    assert f"The API key variable {VARIABLE} is not set on this worker." in html


def test_retry_failed_redoes_only_the_failed_calls(client, owner, keyless_run, monkeypatch):
    deliver_all(keyless_run)
    keyless_run.refresh_from_db()
    before = keyless_run.verdicts.filter(outcome__in=["pass", "fail"]).count()
    monkeypatch.setenv(VARIABLE, "sk-test")  # the key is fixed, on every machine
    client.force_login(owner)
    client.post(reverse("run-action", args=[keyless_run.pk, "retry-failed"]))
    run = Run.objects.get(pk=keyless_run.pk)
    assert (run.status, run.attempt) == (Run.Status.RUNNING, 2)
    assert run.tasks.filter(done_at__isnull=True).count() == 2  # the keyless judge's only
    deliver_all(run)
    run.refresh_from_db()
    assert run.status == Run.Status.DONE and not run.reason
    assert run.verdicts.filter(outcome__in=["pass", "fail"]).count() == before + 6
    assert not run.verdicts.filter(outcome="error").exists()


def test_an_ended_runs_errors_are_kept_until_it_runs_again(client, owner, keyless_run, monkeypatch):
    from evaluation.kept.models import KeptFigure

    deliver_all(keyless_run)
    keyless_run.refresh_from_db()
    client.force_login(owner)
    assert "missing_key" in page(client, keyless_run).split("data-errors", 1)[1]
    # Kept with the run's other counts over its verdicts (runs.overview).
    assert KeptFigure.objects.filter(kind="run-counts", run_id=keyless_run.pk).exists()
    monkeypatch.setenv(VARIABLE, "sk-test")
    run = runs.run_retry_failed(run=keyless_run)
    deliver_all(run)
    run.refresh_from_db()
    assert run.status == Run.Status.DONE
    assert "data-errors" not in page(client, run)  # not the kept errors of the last state
