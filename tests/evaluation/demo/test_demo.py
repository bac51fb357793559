"""The demo command loads a realistic dataset and can run twice without doubling anything."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from annotation.access import dataset_permissions
from annotation.models import Checklist, Criterion, Dataset, Query
from evaluation.answers.models import Answer, System

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
    assert systems == 3  # two systems and the reference system of perfect answers
    assert datasets == 1
    assert System.objects.filter(is_reference=False).count() == 2
    assert queries >= 5
    assert checklists == 2 * queries  # two experts' checklists per query
    # Two systems' answers per query, and the perfect answers of the first query's two
    # submitted checklists (cross-evaluation).
    assert Answer.objects.filter(checklist__isnull=True).count() == 2 * queries
    assert answers == 2 * queries + 2
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
    from evaluation.judges.models import Panel
    from evaluation.runs import selectors
    from evaluation.runs import services as runs
    from evaluation.runs.models import Run

    call_command("demo")
    run = runs.run_create(
        dataset=Dataset.objects.get(), panel=Panel.objects.get(name="Offline checks")
    )
    run = runs.wait_for(runs.run_start(run=run), timeout=60)
    assert run.status == Run.Status.DONE
    progress = selectors.run_progress(run)
    assert progress.done == run.expected > 0 and progress.errors == 0


def test_demo_cross_evaluation_runs_offline_and_fills_the_matrix():
    from evaluation.cross_evaluation import services as cross_evaluation
    from evaluation.cross_evaluation.models import CrossEvaluationSettings
    from evaluation.cross_evaluation.selectors import query_overlap
    from evaluation.cross_evaluation.sources import Source
    from evaluation.runs import lifecycle, scope

    call_command("demo")
    dataset = Dataset.objects.get()
    panel = CrossEvaluationSettings.objects.get(dataset=dataset).panel
    query = dataset.queries.order_by("pk").first()
    run = cross_evaluation.cross_evaluation_start(dataset=dataset, panel=panel, queries=[query])
    judge = panel.judges.get()
    for answer in scope.run_answers(run):
        lifecycle.run_task(worker="test", run_id=run.pk, answer_id=answer.pk, judge_id=judge.pk)
    run.refresh_from_db()
    assert run.status == "done"
    overlap = query_overlap(query, Source("latest"))
    a, b = overlap.checklists
    # Each perfect answer states its own criteria, so it covers them better than the other
    # expert's (a format criterion such as "presents a table" can still fail offline).
    cells = {(x.pk, y.pk): overlap.matrix.cell(x.pk, y.pk) for x in (a, b) for y in (a, b)}
    assert all(c.undecided == 0 and c.passed + c.failed > 0 for c in cells.values())
    assert cells[a.pk, a.pk].overlap > cells[b.pk, a.pk].overlap
    assert cells[b.pk, b.pk].overlap > cells[a.pk, b.pk].overlap


def test_the_demo_complexity_curve_has_several_buckets():
    """The demo's checklists have several sizes, so that a run's complexity curve on the
    analytics page is a curve (three buckets), not one point per system."""
    from evaluation.analytics import figures
    from evaluation.judges.models import Panel
    from evaluation.runs import lifecycle, scope
    from evaluation.runs import services as runs
    from evaluation.runs.models import Run

    call_command("demo")
    dataset = Dataset.objects.get()
    panel = Panel.objects.get(name="Offline checks")
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=panel))
    judge = panel.judges.get()
    for answer in scope.run_answers(run):
        lifecycle.run_task(worker="test", run_id=run.pk, answer_id=answer.pk, judge_id=judge.pk)
    run.refresh_from_db()
    assert run.status == Run.Status.DONE
    curve = figures.page(run).curve
    for line in curve.lines:
        filled = [p.bucket.label for p in line.points if p.estimate.n]
        assert filled == ["<10", "10–14", "15–19"], (line.system, filled)
    # The stronger system stays above the baseline in every bucket.
    atlas, baseline = (
        next(line for line in curve.lines if line.system.startswith(name))
        for name in ("Atlas QA", "Baseline RAG")
    )
    # Offline: Atlas QA 0.82, 0.67, 0.38; Baseline RAG 0.23, 0.08, 0.06: both fall.
    for a, b in zip(atlas.points, baseline.points, strict=True):
        if a.estimate.n:
            assert a.estimate.mean > b.estimate.mean, a.bucket.label
