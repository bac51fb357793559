"""A run always ends, and only once: every task is finished whatever happens to it, the
last one ends the run, and a delivery of an older attempt can never finish a newer one.

These run the task body in this process (lifecycle.run_task, as a worker delivery does);
tests/evaluation/runs/test_lifecycle_worker.py repeats the failure paths with a real worker.
"""

from __future__ import annotations

import pytest

from annotation import services
from evaluation.answers.models import Answer
from evaluation.runs import lifecycle, selectors
from evaluation.runs import services as runs
from evaluation.runs.models import Run, RunTask, Verdict
from tests.factories import (
    AnswerFactory,
    PanelFactory,
    QueryFactory,
    offline_judge,
    valid_criteria,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def offline_panel_of_two():
    return PanelFactory(
        name="Offline, twice", judges=[offline_judge("Offline A"), offline_judge("Offline B")]
    )


@pytest.fixture
def two_queries(dataset, collaborator):
    checklists = []
    for _ in range(2):
        query = QueryFactory(dataset=dataset)
        checklists.append(
            services.checklist_create_with_criteria(
                query=query, by=collaborator, criteria=valid_criteria(), submit=True
            )
        )
        AnswerFactory(query=query, text="Revenue was $4.12 billion; margin 61.5%.")
    return checklists


def tasks_of(run: Run) -> list[tuple[int, int]]:
    return list(run.tasks.order_by("answer", "judge").values_list("answer_id", "judge_id"))


def deliver(run: Run, answer_id: int, judge_id: int, attempt: int | None = None) -> int:
    return lifecycle.run_task(
        run_id=run.pk, answer_id=answer_id, judge_id=judge_id, attempt=attempt, worker="test"
    )


def test_a_checklist_reopened_mid_run_does_not_leave_the_run_running(
    dataset, offline_panel_of_two, two_queries, collaborator
):
    _, second = two_queries
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=offline_panel_of_two))
    assert run.expected == 2 * 6 * 2  # two answers × six criteria × two judges
    work = tasks_of(run)
    assert len(work) == 4

    # The first answer's tasks run; then the second query's checklist is reopened.
    for answer_id, judge_id in work[:2]:
        deliver(run, answer_id, judge_id)
    services.checklist_reopen(checklist=second, by=collaborator)
    for answer_id, judge_id in work[2:]:
        deliver(run, answer_id, judge_id)

    run.refresh_from_db()
    assert run.status == Run.Status.DONE
    assert run.expected == Verdict.objects.filter(run=run).count() == 12  # what it holds
    assert selectors.run_progress(run).percent == 100.0


def test_the_run_waits_for_its_last_task(dataset, offline_panel_of_two, two_queries):
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=offline_panel_of_two))
    work = tasks_of(run)
    for answer_id, judge_id in work[:-1]:
        deliver(run, answer_id, judge_id)
        run.refresh_from_db()
        assert run.status == Run.Status.RUNNING
    deliver(run, *work[-1])
    run.refresh_from_db()
    assert run.status == Run.Status.DONE and run.finished_at is not None and not run.reason


def test_a_cancelled_run_resumes_its_unfinished_tasks_and_repeats_nothing(
    dataset, offline_panel_of_two, two_queries
):
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=offline_panel_of_two))
    work = tasks_of(run)
    for answer_id, judge_id in work[:2]:
        deliver(run, answer_id, judge_id)
    before = set(Verdict.objects.filter(run=run).values_list("pk", "updated_at"))
    run = runs.run_cancel(run=run)
    assert deliver(run, *work[2]) == 0  # a delivery after the cancel does nothing
    assert run.tasks.filter(done_at__isnull=True).count() == 2

    run = runs.run_resume(run=run)
    assert (run.status, run.attempt) == (Run.Status.RUNNING, 2)
    assert set(run.tasks.filter(done_at__isnull=True).values_list("attempt", flat=True)) == {2}
    for answer_id, judge_id in work:
        deliver(run, answer_id, judge_id)
    run.refresh_from_db()
    assert run.status == Run.Status.DONE
    assert before <= set(Verdict.objects.filter(run=run).values_list("pk", "updated_at"))
    assert Verdict.objects.filter(run=run).count() == 24


def test_actions_follow_the_status(dataset, offline_panel_of_two, two_queries):
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=offline_panel_of_two))
    assert selectors.run_actions(run, has_errors=False) == ["cancel"]
    with pytest.raises(runs.RunStateError):
        runs.run_retry_failed(run=run)
    run = runs.run_cancel(run=run)
    assert selectors.run_actions(run, has_errors=False) == ["resume"]
    with pytest.raises(runs.RunStateError):
        runs.run_cancel(run=run)
    run = runs.run_resume(run=run)
    for answer_id, judge_id in tasks_of(run):
        deliver(run, answer_id, judge_id)
    run.refresh_from_db()
    assert run.status == Run.Status.DONE
    assert selectors.run_actions(run, has_errors=False) == []
    for action in (runs.run_resume, runs.run_retry_failed, runs.run_cancel):
        with pytest.raises(runs.RunStateError):
            action(run=run)


def test_two_deliveries_of_one_task_cannot_both_claim_it(
    dataset, offline_panel_of_two, two_queries
):
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=offline_panel_of_two))
    answer_id, judge_id = tasks_of(run)[0]
    ids = {"run_id": run.pk, "answer_id": answer_id, "judge_id": judge_id, "attempt": 1}
    first = lifecycle.claim(**ids, worker="one")
    assert first is not None
    assert lifecycle.claim(**ids, worker="two") is None  # held by a live delivery
    assert lifecycle.finish(first)
    assert lifecycle.claim(**ids, worker="three") is None  # done


def test_a_stale_delivery_cannot_finish_a_newer_attempt(dataset, offline_panel_of_two, two_queries):
    """A delivery of attempt 1 still in flight when the run is cancelled and resumed: its
    finish neither marks the task done nor ends attempt 2; it hands the task over."""
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=offline_panel_of_two))
    work = tasks_of(run)
    ids = {"run_id": run.pk, "answer_id": work[0][0], "judge_id": work[0][1]}
    stale = lifecycle.claim(**ids, attempt=1, worker="old")
    for answer_id, judge_id in work[1:]:
        deliver(run, answer_id, judge_id)
    run = runs.run_resume(run=runs.run_cancel(run=run))
    assert run.attempt == 2
    # The new attempt's delivery finds the task held by the live old one, and leaves it.
    assert deliver(run, *work[0], attempt=2) == 0

    assert not lifecycle.finish(stale)
    task = RunTask.objects.get(run=run, answer=work[0][0], judge=work[0][1])
    assert task.done_at is None and task.lease == "" and task.attempt == 2
    run.refresh_from_db()
    assert run.status == Run.Status.RUNNING  # not closed by the stale delivery
    assert deliver(run, *work[0], attempt=1) == 0  # a late copy of attempt 1 cannot claim

    deliver(run, *work[0], attempt=2)  # the hand-over's delivery
    run.refresh_from_db()
    assert run.status == Run.Status.DONE
    assert Verdict.objects.filter(run=run).count() == 24


def test_a_run_whose_answers_are_deleted_still_ends(dataset, offline_panel_of_two, two_queries):
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=offline_panel_of_two))
    work = tasks_of(run)
    deliver(run, *work[0])
    deliver(run, *work[1])
    Answer.objects.filter(pk=work[2][0]).delete()  # its tasks go with it
    deliver(run, *work[2])  # the delivery finds no task left
    run.refresh_from_db()
    assert run.status == Run.Status.DONE


def test_a_run_started_before_tasks_were_recorded_resumes_with_tasks(
    dataset, offline_panel_of_two, two_queries
):
    """The migration fails such runs ("resume it"); resume records the tasks they lack."""
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=offline_panel_of_two))
    work = tasks_of(run)
    run.tasks.all().delete()
    Run.objects.filter(pk=run.pk).update(status=Run.Status.FAILED, reason="no tasks")
    run.refresh_from_db()
    run = runs.run_resume(run=run)
    assert tasks_of(run) == work
    for answer_id, judge_id in work:
        deliver(run, answer_id, judge_id)
    run.refresh_from_db()
    assert run.status == Run.Status.DONE and not run.reason
