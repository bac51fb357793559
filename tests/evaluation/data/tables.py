"""Every row of every table, to show that an import changed nothing (or only what it should),
and the demo dataset after a real run of its offline panel, as `manage.py demo` and the
Runs page make it."""

from __future__ import annotations

import io
from unittest import mock

from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotation.models import Checklist, Dataset

Rows = dict[str, dict[object, dict]]


def every_row() -> Rows:
    """Table name -> its rows by key, every column (`updated_at` too); the many-to-many
    tables (tags, experts, source types, permissions) included."""
    return {
        model._meta.db_table: {
            row[model._meta.pk.attname]: row for row in model.objects.order_by("pk").values()
        }
        for model in apps.get_models(include_auto_created=True)
        if model._meta.managed
    }


def changed_tables(before: Rows, after: Rows) -> list[str]:
    """The tables whose rows differ, each with how many rows it had and has."""
    return [
        f"{table}: {len(rows)} → {len(after[table])} rows"
        for table, rows in before.items()
        if after[table] != rows
    ]


def rewritten_tables(before: Rows, after: Rows) -> list[str]:
    """The tables where a row that was there before changed or went (new rows aside)."""
    return [
        table
        for table, rows in before.items()
        if any(after[table].get(key) != row for key, row in rows.items())
    ]


def demo_after_a_run() -> Dataset:
    """The demo dataset once its offline panel has run, with a reviewer's labels and an
    admin's adjudication on the first answer. The run's tasks run here, one after the other,
    as a worker would run them: through the Celery task, even eagerly, they would start the
    worker's run doctor, a thread that outlives the test."""
    from evaluation.answers.models import Answer
    from evaluation.judges.models import Panel
    from evaluation.review import services as review
    from evaluation.runs import lifecycle, queue
    from evaluation.runs import services as runs
    from evaluation.runs.models import Run, RunTask

    call_command("demo", stdout=io.StringIO())
    dataset = Dataset.objects.get(name="Finance demo")
    run = runs.run_create(dataset=dataset, panel=Panel.objects.get(name="Offline checks"))
    with mock.patch.object(queue, "send_on_commit"):  # nothing for a broker
        runs.run_start(run=run)
    for task in RunTask.objects.filter(run=run).order_by("pk"):
        lifecycle.run_task(
            run_id=run.pk, answer_id=task.answer_id, judge_id=task.judge_id, worker="test"
        )
    run.refresh_from_db()
    assert run.status == Run.Status.DONE and run.expected > 0
    users = get_user_model().objects
    answer = (
        Answer.objects.filter(query__dataset=dataset, checklist__isnull=True).order_by("pk").first()
    )
    first, second = [
        criterion
        for checklist in answer.query.checklists.filter(status=Checklist.Status.SUBMITTED)
        for criterion in checklist.criteria.order_by("position")
    ][:2]
    rita, admin = users.get(username="rita"), users.get(username="admin")
    review.label_set(answer=answer, criterion=first, reviewer=rita, label="pass", note="Stated.")
    review.label_set(answer=answer, criterion=second, reviewer=rita, label="fail")
    review.adjudicate(
        answer=answer, criterion=second, by=admin, label="pass", reason="It is there.",
        expected_version=None,
    )  # fmt: skip
    return dataset
