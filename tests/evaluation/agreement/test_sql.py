"""The agreement figures counted in SQL equal those of the previous pure-Python code (the
oracle, tests/evaluation/agreement/oracle.py), for every panel method, with and without a
run; and the cached figures follow every change of labels, adjudications, groups and runs."""

from __future__ import annotations

import pytest
from django.utils import timezone

from annotation.models import Criterion, QueryCategory
from evaluation.agreement import selectors
from evaluation.agreement.serialize import report_data
from evaluation.datasets.review_imports import import_labels
from evaluation.kept.models import KeptFigure
from evaluation.labels.models import Adjudication, HumanLabel
from evaluation.review import services as review
from evaluation.runs.models import Run
from tests.evaluation.agreement import oracle
from tests.evaluation.agreement.labelled import build_labelled
from tests.support import compare


def same(expected, actual, path="") -> None:
    """Agreement figures equal their oracle to 1e-9 (sums of many float terms)."""
    compare.same(expected, actual, path, rel_tol=1e-9)


def check(dataset, run_id=None) -> None:
    same(
        report_data(oracle.agreement_report(dataset, run_id)),
        report_data(selectors.agreement_report(dataset, run_id)),
    )


@pytest.fixture
def labelled(reviewed_dataset):
    """This module's sizes and seed, in place of the folder's (conftest.py)."""
    return build_labelled(reviewed_dataset, queries=5, criteria=7, systems=3, seed=11)


@pytest.mark.parametrize(
    ("method", "threshold"),
    [("majority", 0.5), ("unanimity", 0.5), ("mean_threshold", 0.5), ("mean_threshold", 0.7)],
)
def test_sql_counts_equal_the_python_oracle(labelled, reviewed_dataset, method, threshold):
    run = labelled.run
    run.snapshot = {**run.snapshot, "method": method, "threshold": threshold}
    run.save(update_fields=["snapshot"])
    check(reviewed_dataset)
    check(reviewed_dataset, run.pk)


def test_without_a_run_and_with_a_run_holding_no_vote(labelled, reviewed_dataset):
    Run.objects.filter(pk=labelled.run.pk).update(status=Run.Status.CANCELLED)
    check(reviewed_dataset)  # no finished run: human-vs-human only
    empty = Run.objects.create(
        dataset=reviewed_dataset, panel=labelled.run.panel, status=Run.Status.DONE,
        snapshot=labelled.run.snapshot, finished_at=timezone.now(),
    )  # fmt: skip
    check(reviewed_dataset, empty.pk)


def test_two_datasets_do_not_mix(labelled, reviewed_dataset, owner):
    from annotation.services import dataset_create

    other = dataset_create(name="Other agreement", by=owner)
    build_labelled(other, queries=2, criteria=3, systems=2, seed=5)
    check(reviewed_dataset)
    check(other)


@pytest.mark.parametrize(("window", "windows"), [(100, 10), (2, 2), (1, 1)])
def test_drill_down_pages_list_the_oracle_items(
    labelled, reviewed_dataset, monkeypatch, window, windows
):
    """Page after page, with windows small enough that pages stop early and go on."""
    monkeypatch.setattr(selectors, "WINDOW", window)
    monkeypatch.setattr(selectors, "WINDOWS", windows)
    items = oracle.load_items(reviewed_dataset, labelled.run)
    for key, cell in (
        (selectors.FigureKey("panel"), None),
        (selectors.FigureKey("judge", "judge-c"), ("fail", "pass")),
        (selectors.FigureKey("system", "Agreement system 1"), None),
        (selectors.FigureKey("source", "(none)"), None),
        (selectors.FigureKey("pair", "ana", "cy"), None),
        (selectors.FigureKey("rater-others", "bo"), ("pass", "pass")),
        (selectors.FigureKey("rater-judges", "ana"), None),
    ):
        expected = [
            ((i.answer_id, i.criterion_id), a, b)
            for i, a, b in oracle.figure_pairs(items, oracle.FigureKey(key.figure, key.value,
                                                                       key.other))
            if cell is None or (a, b) == cell
        ]  # fmt: skip
        found, after = [], None
        while True:
            page = selectors.drill_down(reviewed_dataset, None, key, cell, after=after, limit=7)
            found += [((i.answer_id, i.criterion_id), a, b) for i, a, b in page.pairs]
            if page.next_after is None:
                break
            after = page.next_after
        assert found == expected, key


def overall(dataset):
    return selectors.agreement_report(dataset).overall.agreement


def test_cached_figures_follow_labels_adjudications_and_imports(
    labelled, reviewed_dataset, reviewer
):
    check(reviewed_dataset)
    assert KeptFigure.objects.filter(dataset=reviewed_dataset).count() == 1
    label = HumanLabel.objects.filter(answer__query__dataset=reviewed_dataset).first()
    answer, criterion = label.answer, label.criterion
    before = report_data(selectors.agreement_report(reviewed_dataset))

    review.label_set(answer=answer, criterion=criterion, reviewer=reviewer, label="pass")
    check(reviewed_dataset)
    review.label_set(answer=answer, criterion=criterion, reviewer=reviewer, label="fail")
    check(reviewed_dataset)
    mine = HumanLabel.objects.get(answer=answer, criterion=criterion, rater="reviewer")
    review.label_delete(label=mine, by=reviewer)
    check(reviewed_dataset)
    review.label_restore(answer=answer, criterion=criterion, reviewer=reviewer, previous=None)
    check(reviewed_dataset)

    current = Adjudication.objects.filter(answer=answer, criterion=criterion).first()
    flipped = "fail" if current and current.label == "pass" else "pass"
    review.adjudicate(
        answer=answer, criterion=criterion, by=reviewer, label=flipped,
        expected_version=current.version if current else None,
    )  # fmt: skip
    check(reviewed_dataset)
    assert report_data(selectors.agreement_report(reviewed_dataset)) != before

    import_labels(
        dataset=reviewed_dataset, name="more.jsonl",
        content=f'{{"answer": {answer.pk}, "criterion": {criterion.pk}, '
        f'"rater": "dr-import", "label": "fail"}}\n',
    )  # fmt: skip
    check(reviewed_dataset)
    assert KeptFigure.objects.filter(dataset=reviewed_dataset).count() == 1


def test_cached_figures_follow_groups_and_runs(labelled, reviewed_dataset):
    check(reviewed_dataset)
    criterion = Criterion.objects.filter(pk__in=labelled.kinds).first()
    criterion.kind = "format" if criterion.kind != "format" else "fact"
    criterion.save()
    check(reviewed_dataset)
    criterion.source_types.clear()
    check(reviewed_dataset)
    query = criterion.checklist.query
    query.category = QueryCategory.objects.create(name="Renamed category")
    query.save()
    check(reviewed_dataset)
    category = query.category
    category.name = "Renamed again"
    category.save()
    check(reviewed_dataset)
    # Verdicts change only through a run's lifecycle, which moves its attempt and finish.
    run = labelled.run
    run.verdicts.filter(outcome="pass").update(outcome="fail")
    run.attempt += 1
    run.finished_at = timezone.now()
    run.save(update_fields=["attempt", "finished_at"])
    check(reviewed_dataset)


def test_a_running_run_is_never_cached(labelled, reviewed_dataset):
    run = labelled.run
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    KeptFigure.objects.all().delete()
    check(reviewed_dataset, run.pk)
    assert not KeptFigure.objects.exists()
    run.verdicts.filter(outcome="fail").update(outcome="pass")
    check(reviewed_dataset, run.pk)


def test_a_dataset_with_labels_can_be_deleted(transactional_db, reviewed_dataset, reviewer):
    """The receivers of its answers and criteria bump its review counters while the deletion
    runs; the row they write goes with the dataset, so the deletion commits (foreign keys
    checked there)."""
    from evaluation.kept.models import ReviewRevision

    build_labelled(reviewed_dataset, queries=2, criteria=3, systems=2, seed=3)
    label = HumanLabel.objects.filter(answer__query__dataset=reviewed_dataset).first()
    review.label_set(
        answer=label.answer, criterion=label.criterion, reviewer=reviewer, label="pass"
    )
    assert ReviewRevision.objects.filter(dataset=reviewed_dataset).exists()
    ReviewRevision.objects.filter(dataset=reviewed_dataset).delete()  # the deletion recreates it

    # Django's cascade (the admin's and the API's deletions go through evaluation.datasets.purge,
    # which ends with this cascade on a dataset emptied first; a shell's .delete() is this).
    reviewed_dataset.delete()
    assert not ReviewRevision.objects.exists() and not HumanLabel.objects.exists()
