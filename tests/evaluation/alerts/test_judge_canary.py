"""The judge canary (issue 43, point 1), end to end on a real worker: a schedule that keeps a
canary starts, with each run, a run of the dataset's labelled items past the cache; the
loopback judge is scripted to change its answers between two nights. The second night's
canary names the judge as changed, the run page says "judge changed?", and the alert says
so instead of reporting the system's drop as a regression."""

from __future__ import annotations

import datetime as dt
import json
import time

import pytest
from django.urls import reverse

from evaluation.agreement import canary
from evaluation.alerts.models import AlertEvent, RegressionAlert
from evaluation.answers.models import Answer, System
from evaluation.labels.models import Adjudication
from evaluation.runs.models import Run, Verdict
from evaluation.schedules import services as schedules
from loopback import LoopbackOpenAI
from tests.evaluation.alerts.test_regression_alerts import SECRET_ENV, receiver  # noqa: F401
from tests.factories import PanelFactory, loopback_judges
from tests.support.builders import checklisted_query

QUERIES, CRITERIA = 4, 5


class Judge:
    """The loopback judge: every criterion passes, until it changes and fails them all."""

    def __init__(self) -> None:
        self.changed = False

    def __call__(self, request) -> dict:
        verdict = "fail" if self.changed else "pass"
        return {"verdict": verdict, "failure_kind": None if verdict == "pass" else "missing",
                "rationale": f"Scripted {verdict}."}  # fmt: skip


def answers(system: System, queries, label: str) -> None:
    for query in queries:
        Answer.objects.create(system=system, query=query, text=f"{label} on {query.pk}.",
                              run_label=label)  # fmt: skip


def wait_for(condition, worker, seconds: float = 120):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.25)
    pytest.fail(f"Timed out.\n{worker.log()[-4000:]}")


def night(dataset, panel, alpha, worker) -> tuple[Run, Run]:
    """The schedule's tick, then both runs ended and the canary measured."""
    run = schedules.scheduled_run(
        dataset_id=dataset.pk, panel_id=panel.pk, system_id=alpha.pk, name="Nightly"
    )
    checked_by = run.canaries.get()
    # The canary's figures are kept when the canary ends; the run it checks is graded on
    # its own and may end later (it did on a slow, busy machine), so wait for both.
    wait_for(lambda: Run.objects.filter(pk=checked_by.pk).exclude(canary_result={}).exists()
             and Run.objects.filter(pk=run.pk, status__in=Run.FINISHED).exists(),
             worker)  # fmt: skip
    run.refresh_from_db()
    checked_by.refresh_from_db()
    assert run.status in Run.FINISHED and checked_by.status in Run.FINISHED
    return run, checked_by


def test_a_judge_that_changes_between_two_nights_is_caught_by_the_canary(
    celery_worker,
    dataset,
    owner,
    owner_client,
    receiver,  # noqa: F811
):
    alpha = System.objects.create(name="Alpha")
    queries = []
    for q in range(QUERIES):
        made = checklisted_query(dataset, criteria=CRITERIA, text=f"Canary query {q}")
        queries.append(made.query)
        # The labelled set: an answer per query whose every criterion an expert passed.
        reference = Answer.objects.create(system=alpha, query=made.query, run_label="labelled",
                                          text=f"A reviewed answer to {q}.")  # fmt: skip
        Adjudication.objects.bulk_create(
            Adjudication(answer=reference, criterion=c, label="pass") for c in made.criteria
        )
    judge = Judge()
    RegressionAlert.objects.create(
        dataset=dataset, threshold=0.1, webhook_url=receiver.url, secret_env=SECRET_ENV
    )
    with LoopbackOpenAI(responder=judge) as server:
        panel = PanelFactory(judges=loopback_judges(server, 1))
        schedules.schedule_save(
            dataset=dataset, name="Nightly", system=alpha, panel=panel, at=dt.time(2, 30),
            days="*", enabled=True, by=owner, canary=True,
        )  # fmt: skip
        answers(alpha, queries, "night-1")
        first, first_canary = night(dataset, panel, alpha, celery_worker)
        assert first.answer_run_label == "night-1" and first_canary.scope == Run.Scope.LABELLED
        result = first_canary.canary_result
        assert result["judges"]["Judge 0"]["rate"] == 1.0  # 20 of 20 agree with the experts
        assert result["judges"]["Judge 0"]["n"] == QUERIES * CRITERIA
        assert result["changed"] == [] and result["previous"] is None
        # The canary's calls went past the cache: the labelled items were never graded
        # before, and the second night's canary asks again rather than reading these.
        assert not Verdict.objects.filter(run=first_canary, cache_hit=True).exists()

        judge.changed = True  # the model behind the same name changes overnight
        answers(alpha, queries, "night-2")
        second, second_canary = night(dataset, panel, alpha, celery_worker)
        assert not Verdict.objects.filter(run=second_canary, cache_hit=True).exists()
        result = second_canary.canary_result
        assert result["previous"] == first_canary.pk
        assert result["judges"]["Judge 0"]["rate"] == 0.0
        assert result["changed"] == ["Judge 0"]
        event = wait_for(lambda: AlertEvent.objects.filter(run=second).first(), celery_worker)

    # The alert says "judge changed?", not that Alpha regressed (its score fell from 1 to 0).
    assert event.payload["event"] == "judge-changed" and event.difference == pytest.approx(-1.0)
    assert event.payload["canary"]["changed"] == ["Judge 0"]
    judges = event.payload["canary"]["judges"]["Judge 0"]
    assert (judges["before"]["rate"], judges["now"]["rate"]) == (1.0, 0.0)
    assert not AlertEvent.objects.filter(payload__event="regression").exists()
    wait_for(lambda: receiver.received, celery_worker)
    assert json.loads(receiver.received[0][3])["event"] == "judge-changed"

    # The run page says so, with the agreement over time.
    page = owner_client.get(reverse("run-detail", args=[second.pk])).content.decode()
    assert 'data-judge-changed="true"' in page and 'id="canary-chart"' in page
    assert 'data-canary-judge="Judge 0"' in page
    first_page = owner_client.get(reverse("run-detail", args=[first.pk])).content.decode()
    assert 'data-judge-changed="false"' in first_page and "(first canary)" in first_page
    # Canaries check the runs; they are not runs the analytics or agreement pages offer.
    from evaluation.runs.selectors import runs_of_system_answers

    assert {r.pk for r in runs_of_system_answers(dataset)} == {first.pk, second.pk}
    assert canary.previous_canary(second_canary) == first_canary


def test_a_dataset_with_nothing_labelled_runs_without_a_canary(
    dataset, owner, settle_session_worker
):
    with LoopbackOpenAI(responder=Judge()) as server:
        panel = PanelFactory(judges=loopback_judges(server, 1))
        made = checklisted_query(dataset, criteria=2, answers=1)
        alpha = made.answers[0].system
        schedules.schedule_save(
            dataset=dataset, name="Nightly", system=alpha, panel=panel, at=dt.time(2, 30),
            days="*", enabled=True, by=owner, canary=True,
        )  # fmt: skip
        run = schedules.scheduled_run(
            dataset_id=dataset.pk, panel_id=panel.pk, system_id=alpha.pk, name="Nightly"
        )
        assert run is not None and not run.canaries.exists()
