"""Items a run's judges were shown as worked examples (issue 25, point 2) are left out of
every agreement figure of that run: the figures equal the oracle's recount of the dataset
without those items (their labels and adjudications taken away by hand), the kept counts
moved by labels equal a full recount, the drill-down lists none of them, and the page and
API say how many were left out. Runs without examples keep their figures and keys."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.urls import reverse

from annotation.models import Criterion
from evaluation.agreement import cells as sql
from evaluation.agreement import kept as agreement_kept
from evaluation.agreement import selectors
from evaluation.agreement.serialize import report_data
from evaluation.answers.models import Answer
from evaluation.judges.tuning import excluded_items
from evaluation.kept import figures
from evaluation.labels.models import Adjudication, HumanLabel
from evaluation.review import services as review
from evaluation.runs.models import Run
from tests.evaluation.agreement import oracle
from tests.evaluation.agreement.labelled import build_labelled
from tests.support import compare


@pytest.fixture
def labelled(reviewed_dataset):
    return build_labelled(reviewed_dataset, queries=3, criteria=5, systems=2, seed=13)


def _examples_from(run: Run, items: list[tuple[int, int]]) -> None:
    """The run's first judge was shown these items (as a run start records them)."""
    members = [dict(m) for m in run.snapshot["members"]]
    members[0]["example_items"] = [list(item) for item in items]
    run.snapshot = {**run.snapshot, "members": members}
    run.save(update_fields=["snapshot"])


def _chosen(dataset) -> list[tuple[int, int]]:
    """Five labelled items and two adjudicated ones (some may be both)."""
    labelled = list(
        HumanLabel.objects.filter(answer__query__dataset=dataset)
        .order_by("answer_id", "criterion_id")
        .values_list("answer_id", "criterion_id")
        .distinct()[:5]
    )
    adjudicated = list(
        Adjudication.objects.filter(answer__query__dataset=dataset)
        .order_by("-answer_id")
        .values_list("answer_id", "criterion_id")[:2]
    )
    return sorted(set(labelled + adjudicated))


def _recount_without(dataset, run, items) -> dict:
    """The oracle's report with the items' labels and adjudications deleted (rolled back)."""

    class Rollback(Exception):
        pass

    found = {}
    try:
        with transaction.atomic():
            for answer_id, criterion_id in items:
                HumanLabel.objects.filter(answer_id=answer_id, criterion_id=criterion_id).delete()
                Adjudication.objects.filter(answer_id=answer_id, criterion_id=criterion_id).delete()
            found.update(report_data(oracle.agreement_report(dataset, run.pk)))
            raise Rollback
    except Rollback:
        pass
    return found


def _comparable(data: dict) -> dict:
    """What a recount without the items must equal: every figure and count; the reviewers'
    label totals count every label they made, example or not, so only their figures."""
    counts = {k: v for k, v in data["counts"].items() if k != "excluded"}
    reviewers = [{k: r[k] for k in ("rater", "with_judges", "with_others")}
                 for r in data["reviewers"]]  # fmt: skip
    return {**data, "counts": counts, "reviewers": reviewers}


def test_every_figure_equals_a_recount_without_the_example_items(labelled, reviewed_dataset):
    run = labelled.run
    before = report_data(selectors.agreement_report(reviewed_dataset, run.pk))
    assert before["counts"]["excluded"] == 0
    items = _chosen(reviewed_dataset)
    _examples_from(run, items)
    assert excluded_items(run) == set(items)
    report = selectors.agreement_report(reviewed_dataset, run.pk)
    actual = report_data(report)
    assert actual["counts"]["excluded"] == len(items)
    assert actual["counts"]["items"] == before["counts"]["items"] - len(items)
    expected = _recount_without(reviewed_dataset, run, items)
    compare.same(_comparable(expected), _comparable(actual), rel_tol=1e-9)
    # The figures really moved (the items were not already outside them).
    assert actual["judge_vs_human"]["overall"]["n"] < before["judge_vs_human"]["overall"]["n"]
    # The cached figures are kept under their own key: asked again, the same numbers.
    again = report_data(selectors.agreement_report(reviewed_dataset, run.pk))
    compare.same(actual, again)


def test_the_drill_down_lists_no_example_item(labelled, reviewed_dataset):
    run = labelled.run
    items = _chosen(reviewed_dataset)
    _examples_from(run, items)
    listed = selectors.drill_down(reviewed_dataset, run.pk, selectors.FigureKey("panel"),
                                  limit=10_000)  # fmt: skip
    keys = {(item.answer_id, item.criterion_id) for item, _, _ in listed.pairs}
    assert keys and not keys & set(items)
    report = selectors.agreement_report(reviewed_dataset, run.pk)
    assert len(keys) == report.overall.agreement.n


def test_labels_move_the_kept_counts_to_a_recount_without_the_items(
    labelled, reviewed_dataset, reviewer
):
    run = labelled.run
    items = _chosen(reviewed_dataset)
    _examples_from(run, items)
    selectors.agreement_report(reviewed_dataset, run.pk)  # counted and kept
    other = HumanLabel.objects.filter(answer__query__dataset=reviewed_dataset).exclude(
        answer_id=items[0][0], criterion_id=items[0][1]
    )
    outside = next(lbl for lbl in other if (lbl.answer_id, lbl.criterion_id) not in items)
    order = lambda row: tuple("" if v is None else str(v) for v in row)  # noqa: E731
    method, threshold = agreement_kept.run_method(run)
    for answer_id, criterion_id, label in (
        (*items[0], "fail"),  # an example item: no figure moves but the labels per day
        (outside.answer_id, outside.criterion_id, "pass"),
    ):
        review.label_set(
            answer=Answer.objects.get(pk=answer_id),
            criterion=Criterion.objects.get(pk=criterion_id), reviewer=reviewer, label=label,
        )  # fmt: skip
        stored = figures.kept(agreement_kept.kept_state(reviewed_dataset.pk, run))
        assert stored is not None  # moved by the label, not recounted by a reader
        recount = sql.cells(reviewed_dataset.pk, run.pk, method=method, threshold=threshold,
                            excluded=items)  # fmt: skip
        recount += agreement_kept.dataset_label_days(reviewed_dataset)
        assert sorted(stored, key=order) == sorted(
            ([c.figure, c.value, c.other, c.first, c.second, c.n] for c in recount), key=order
        )


def test_a_run_without_examples_keeps_its_key(labelled, reviewed_dataset):
    run = labelled.run
    state = agreement_kept.kept_state(reviewed_dataset.pk, run)
    assert "excluded" not in state.text
    _examples_from(run, _chosen(reviewed_dataset))
    assert agreement_kept.kept_state(reviewed_dataset.pk, run).key != state.key


def test_page_and_api_say_how_many_items_are_left_out(
    labelled, reviewed_dataset, client, reviewer, reviewer_api
):
    run = labelled.run
    items = _chosen(reviewed_dataset)
    client.force_login(reviewer)
    url = reverse("dataset-agreement", args=[reviewed_dataset.pk])
    assert "data-examples-excluded" not in client.get(url).content.decode()
    _examples_from(run, items)
    html = client.get(url, {"run": run.pk}).content.decode()
    assert f"<strong>{len(items)}</strong> items used as judge examples are left out" in html
    body = reviewer_api.get(
        reverse("api-evaluation:agreement"), {"dataset": reviewed_dataset.pk, "run": run.pk}
    ).json()
    assert body["counts"]["excluded"] == len(items)
