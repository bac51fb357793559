"""The demo command loads a realistic dataset and can run twice without doubling anything."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from annotation.models import Checklist, Criterion, Dataset, Query
from annotation.permissions import dataset_permissions
from evaluation.models import Answer, System

pytestmark = pytest.mark.django_db


def counts() -> tuple[int, ...]:
    models = (Dataset, Query, Checklist, Criterion, System, Answer)
    return tuple(m.objects.count() for m in models)


def test_demo_loads_and_is_idempotent(capsys):
    call_command("demo")
    first = counts()
    call_command("demo")
    assert counts() == first
    datasets, queries, checklists, criteria, systems, answers = first
    assert (datasets, systems) == (1, 2)
    assert queries >= 5
    assert checklists == 2 * queries  # two experts' checklists per query
    assert answers == 2 * queries  # two systems' answers per query
    assert criteria >= 5 * checklists
    assert "Log in as admin" in capsys.readouterr().out


def test_demo_queries_carry_query_dates_and_experts_have_access():
    from django.contrib.auth import get_user_model

    call_command("demo")
    assert not Query.objects.filter(query_date__isnull=True).exists()
    dataset = Dataset.objects.get()
    alice = get_user_model().objects.get(username="alice")
    assert "annotate_dataset" in dataset_permissions(alice, dataset)
    assert Checklist.objects.filter(author=alice).count() == Query.objects.count()


def test_demo_has_submitted_checklists_that_meet_the_guideline():
    from annotation.guidelines import checklist_report
    from evaluation.demo import data

    call_command("demo")
    submitted = Checklist.objects.filter(status=Checklist.Status.SUBMITTED)
    assert submitted.count() == len(data.SUBMITTED)
    for checklist in submitted:
        assert not checklist_report(checklist).blocking
    assert Checklist.objects.filter(status=Checklist.Status.DRAFT).exists()
    assert Criterion.objects.filter(citations__isnull=False).exists()


def test_demo_run_with_the_offline_panel_completes(celery_worker):
    from evaluation import runs
    from evaluation.models import Panel, Run

    call_command("demo")
    run = runs.run_create(
        dataset=Dataset.objects.get(), panel=Panel.objects.get(name="Offline checks")
    )
    run = runs.wait_for(runs.run_start(run=run), timeout=60)
    assert run.status == Run.Status.DONE
    progress = runs.run_progress(run)
    assert progress.done == run.expected > 0 and progress.errors == 0
