"""A run is done when every (answer × judge) task has finished, even when the checklists
change under it: a checklist reopened or a criterion disabled mid-run changes how many
verdicts the remaining tasks write."""

from __future__ import annotations

import pytest

from annotation import services
from evaluation import runs
from evaluation.models import Judge, Panel, PanelMember, Run, RunTask, Verdict
from tests.factories import AnswerFactory, QueryFactory, valid_criteria

pytestmark = pytest.mark.django_db


@pytest.fixture
def offline_panel():
    panel = Panel.objects.create(name="Offline, twice")
    for name in ("Offline A", "Offline B"):
        judge = Judge.objects.create(name=name, kind=Judge.Kind.NO_LLM)
        PanelMember.objects.create(panel=panel, judge=judge)
    return panel


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


def test_a_checklist_reopened_mid_run_does_not_leave_the_run_running(
    dataset, offline_panel, two_queries, collaborator
):
    _, second = two_queries
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=offline_panel))
    assert run.expected == 2 * 6 * 2  # two answers × six criteria × two judges
    work = tasks_of(run)
    assert len(work) == 4

    # The first answer's tasks run; then the second query's checklist is reopened.
    for answer_id, judge_id in work[:2]:
        runs.judge_answer(run_id=run.pk, answer_id=answer_id, judge_id=judge_id)
    services.checklist_reopen(checklist=second, by=collaborator)
    for answer_id, judge_id in work[2:]:
        runs.judge_answer(run_id=run.pk, answer_id=answer_id, judge_id=judge_id)

    run.refresh_from_db()
    assert run.status == Run.Status.DONE
    assert run.expected == Verdict.objects.filter(run=run).count() == 12  # what it holds
    assert runs.run_progress(run).percent == 100.0


def test_the_run_waits_for_its_last_task(dataset, offline_panel, two_queries):
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=offline_panel))
    work = tasks_of(run)
    for answer_id, judge_id in work[:-1]:
        runs.judge_answer(run_id=run.pk, answer_id=answer_id, judge_id=judge_id)
        run.refresh_from_db()
        assert run.status == Run.Status.RUNNING
    runs.judge_answer(run_id=run.pk, answer_id=work[-1][0], judge_id=work[-1][1])
    run.refresh_from_db()
    assert run.status == Run.Status.DONE and run.finished_at is not None


def test_resume_starts_every_task_afresh_and_repeats_nothing(dataset, offline_panel, two_queries):
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=offline_panel))
    for answer_id, judge_id in tasks_of(run):
        runs.judge_answer(run_id=run.pk, answer_id=answer_id, judge_id=judge_id)
    run.refresh_from_db()
    verdicts = set(Verdict.objects.filter(run=run).values_list("pk", "updated_at"))

    run = runs.run_resume(run=run)
    assert run.status == Run.Status.RUNNING
    assert RunTask.objects.filter(run=run, done_at__isnull=True).count() == 4
    for answer_id, judge_id in tasks_of(run):
        assert runs.judge_answer(run_id=run.pk, answer_id=answer_id, judge_id=judge_id) == 0
    run.refresh_from_db()
    assert run.status == Run.Status.DONE
    assert set(Verdict.objects.filter(run=run).values_list("pk", "updated_at")) == verdicts


def test_a_run_from_before_tasks_were_recorded_still_finishes_by_its_count(
    dataset, offline_panel, two_queries
):
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=offline_panel))
    work = tasks_of(run)
    run.tasks.all().delete()  # as a run started by the previous version
    for answer_id, judge_id in work:
        runs.judge_answer(run_id=run.pk, answer_id=answer_id, judge_id=judge_id)
    run.refresh_from_db()
    assert run.status == Run.Status.DONE
