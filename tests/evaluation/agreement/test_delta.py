"""A label or an adjudication moves the kept agreement counts by the item's own counts
(evaluation.agreement.delta) instead of leaving the next reader to recount every labelled
item: after every kind of review write, the counts kept under the new revision exist
before anyone reads them, and equal a recount, for every run and without one; two
reviewers labelling at once (PostgreSQL, two connections) leave counts equal to a recount."""

from __future__ import annotations

import random
import threading

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation import roles, services
from evaluation.agreement import cells as sql
from evaluation.agreement import delta, selectors
from evaluation.agreement import kept as agreement_kept
from evaluation.agreement.cells import Cell
from evaluation.kept import events, figures
from evaluation.kept.counters import counters
from evaluation.labels.models import HumanLabel
from evaluation.review import services as review
from evaluation.runs.models import Run
from tests.evaluation.agreement.labelled import build_labelled
from tests.factories import UserFactory
from tests.support.review_writes import every_kind_of_write, version

# SQLite serialises writers on one file lock: the counter row's lock needs PostgreSQL.
ROW_LOCKS_NEED_POSTGRESQL = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the counter row's lock is PostgreSQL's"
)


def recount(dataset, run) -> list[list]:
    method, threshold = agreement_kept.run_method(run)
    rows = sql.cells(dataset.pk, run.pk if run else None, method=method, threshold=threshold)
    rows += agreement_kept.dataset_label_days(dataset)
    return sorted([[c.figure, c.value, c.other, c.first, c.second, c.n] for c in rows], key=_order)


def _order(row: list) -> tuple:
    return tuple("" if v is None else str(v) for v in row)


def kept(dataset, run) -> list[list] | None:
    """The counts stored under the dataset's current revision for the run, without
    computing anything."""
    rows = figures.kept(agreement_kept.kept_state(dataset.pk, run))
    return None if rows is None else sorted(rows, key=_order)


def number(dataset) -> int:
    """The dataset's review revision."""
    return counters(dataset.pk).number


def warm(dataset, runs) -> None:
    for run in runs:
        selectors.agreement_report(dataset, run.pk)


@pytest.fixture
def labelled(reviewed_dataset):
    """This module's sizes and seed, in place of the folder's (conftest.py)."""
    return build_labelled(reviewed_dataset, queries=3, criteria=5, systems=2, seed=3)


@pytest.fixture
def two_runs(labelled, reviewed_dataset):
    """The fixture's run and an older one of another method over the same votes: the page
    keeps counts for each run it was asked about and for the no-run view."""
    older = Run.objects.create(
        dataset=reviewed_dataset, panel=labelled.run.panel, status=Run.Status.DONE,
        snapshot={**labelled.run.snapshot, "method": "unanimity"},
        started_at=timezone.now(), finished_at=timezone.now(),
    )  # fmt: skip
    for verdict in labelled.run.verdicts.all():
        verdict.pk, verdict.run = None, older
        verdict.save()
    return [labelled.run, older]


def test_every_review_write_moves_the_kept_counts_to_a_recount(
    two_runs, reviewed_dataset, reviewer
):
    warm(reviewed_dataset, two_runs)
    label = HumanLabel.objects.filter(answer__query__dataset=reviewed_dataset).first()
    answer, criterion = label.answer, label.criterion
    writes = every_kind_of_write(answer, criterion, reviewer)
    for write in writes:
        before = number(reviewed_dataset)
        write()
        assert number(reviewed_dataset) > before
        for run in two_runs:
            # Stored by the write itself: nothing has read the figures since.
            assert kept(reviewed_dataset, run) == recount(reviewed_dataset, run)


def test_a_new_system_answer_keeps_the_counts_and_a_perfect_answer_moves_cross_evaluation(
    two_runs, reviewed_dataset, client, owner
):
    """A system answer carries no label, adjudication or verdict of a finished run: the
    kept counts stay valid (answers arriving one by one through the API used to make the
    next agreement reader recount, seconds at scale); only the queues' key moves. A new
    perfect answer still moves the cross-evaluation figures."""
    from annotation.models import Checklist, Query
    from evaluation.answers.models import Answer

    warm(reviewed_dataset, two_runs)
    before = counters(reviewed_dataset.pk)
    query = Query.objects.filter(dataset=reviewed_dataset).first()
    system = Answer.objects.filter(query=query).first().system  # a new name would bump
    Answer.objects.create(query=query, system=system, run_label="nightly", text="Streamed in.")
    assert number(reviewed_dataset) == before.number
    assert counters(reviewed_dataset.pk).answers != before.answers  # what the queues read
    for run in two_runs:
        assert kept(reviewed_dataset, run) == recount(reviewed_dataset, run)  # still kept
    checklist = Checklist.objects.filter(query=query).first()
    Answer.objects.create(
        query=query, system=system, run_label="perfect", checklist=checklist, text="Perfect."
    )
    assert number(reviewed_dataset) > before.number
    assert counters(reviewed_dataset.pk).cross_evaluation > before.cross_evaluation


def test_a_group_whose_last_label_goes_disappears_as_in_a_recount(
    labelled, reviewed_dataset, reviewer
):
    warm(reviewed_dataset, [labelled.run])
    label = HumanLabel.objects.filter(answer__query__dataset=reviewed_dataset).first()
    review.label_set(
        answer=label.answer, criterion=label.criterion, reviewer=reviewer, label="pass"
    )
    assert "reviewer" in selectors.agreement_report(reviewed_dataset).raters
    mine = HumanLabel.objects.get(pk__gt=0, rater="reviewer")
    review.label_delete(label=mine, by=reviewer)
    report = selectors.agreement_report(reviewed_dataset)
    assert "reviewer" not in report.raters
    assert kept(reviewed_dataset, labelled.run) == recount(reviewed_dataset, labelled.run)


def test_a_random_day_of_labelling_keeps_every_count_exact(labelled, reviewed_dataset, reviewer):
    second = UserFactory(username="second-reviewer")
    services.dataset_set_role(
        dataset=reviewed_dataset, user=second, role=roles.DatasetRole.REVIEWER
    )
    warm(reviewed_dataset, [labelled.run])
    rng = random.Random(5)
    items = list(
        HumanLabel.objects.filter(answer__query__dataset=reviewed_dataset)
        .select_related("answer", "criterion")
        .order_by("pk")[:12]
    )
    for _ in range(40):
        item = rng.choice(items)
        who = rng.choice([reviewer, second])
        action = rng.choice(["label", "label", "delete", "adjudicate"])
        if action == "label":
            review.label_set(answer=item.answer, criterion=item.criterion, reviewer=who,
                             label=rng.choice(["pass", "fail"]))  # fmt: skip
        elif action == "delete":
            mine = HumanLabel.objects.filter(
                answer=item.answer, criterion=item.criterion, rater=who.get_username()
            ).first()
            if mine:
                review.label_delete(label=mine, by=who)
        else:
            review.adjudicate(answer=item.answer, criterion=item.criterion, by=who,
                              label=rng.choice(["pass", "fail"]),
                              expected_version=version(item.answer, item.criterion))  # fmt: skip
        assert kept(reviewed_dataset, labelled.run) == recount(reviewed_dataset, labelled.run)


def test_without_a_finished_run_the_human_counts_move_too(labelled, reviewed_dataset, reviewer):
    Run.objects.filter(pk=labelled.run.pk).update(status=Run.Status.CANCELLED)
    selectors.agreement_report(reviewed_dataset)  # no finished run: human-vs-human only
    label = HumanLabel.objects.filter(answer__query__dataset=reviewed_dataset).first()
    review.label_set(
        answer=label.answer, criterion=label.criterion, reviewer=reviewer, label="fail"
    )
    assert kept(reviewed_dataset, None) == recount(reviewed_dataset, None)


def test_nothing_is_kept_when_the_write_fails(labelled, reviewed_dataset, reviewer):
    warm(reviewed_dataset, [labelled.run])
    before = kept(reviewed_dataset, labelled.run)
    revision = number(reviewed_dataset)
    label = HumanLabel.objects.filter(answer__query__dataset=reviewed_dataset).first()
    with pytest.raises(review.ReviewError):
        review.label_set(answer=label.answer, criterion=label.criterion, reviewer=reviewer,
                         label="maybe")  # fmt: skip
    with pytest.raises(RuntimeError), transaction.atomic():
        review.label_set(answer=label.answer, criterion=label.criterion, reviewer=reviewer,
                         label="pass")  # fmt: skip
        raise RuntimeError("the request failed after the label")
    assert number(reviewed_dataset) == revision
    assert kept(reviewed_dataset, labelled.run) == before


def test_counts_that_do_not_match_the_item_are_dropped_not_patched():
    rows = [["panel", "", "", "pass", "pass", 1], ["count", "items", "", None, None, 1]]
    minus = [Cell("panel", "", "", "fail", "pass", 1), Cell("count", "items", "", None, None, 1)]
    assert delta.apply(rows, minus=minus, plus=[]) is None
    same = [Cell("panel", "", "", "pass", "pass", 1), Cell("count", "items", "", None, None, 1)]
    moved = delta.apply(rows, minus=same, plus=[])
    assert moved == [["count", "items", "", None, None, 0]]


@pytest.mark.django_db(transaction=True)
@ROW_LOCKS_NEED_POSTGRESQL
def test_two_reviewers_labelling_at_once_leave_counts_equal_to_a_recount(reviewed_dataset):
    data = build_labelled(reviewed_dataset, queries=2, criteria=4, systems=2, seed=9)
    raters = [UserFactory(username=f"concurrent-{n}") for n in range(2)]
    for user in raters:
        services.dataset_set_role(
            dataset=reviewed_dataset, user=user, role=roles.DatasetRole.REVIEWER
        )
    warm(reviewed_dataset, [data.run])
    distinct = {}
    for label in HumanLabel.objects.filter(answer__query__dataset=reviewed_dataset).select_related(
        "answer", "criterion"
    ):
        distinct.setdefault((label.answer_id, label.criterion_id), label)
    items = list(distinct.values())[:8]
    assert len(items) == 8
    first_in, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def label(user, mine, hold: bool) -> None:
        try:
            with transaction.atomic():
                for n, item in enumerate(mine):
                    review.label_set(answer=item.answer, criterion=item.criterion,
                                     reviewer=user, label="pass" if n % 2 else "fail")  # fmt: skip
                if hold:  # keep the transaction open: the other must wait for it
                    first_in.set()
                    release.wait(10)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            connection.close()

    first = threading.Thread(target=label, args=(raters[0], items[:4], True))
    first.start()
    assert first_in.wait(10)
    second = threading.Thread(target=label, args=(raters[1], items[4:], False))
    second.start()
    second.join(0.5)
    assert second.is_alive(), "the second writer should wait for the first's revision lock"
    release.set()
    first.join(10)
    second.join(10)
    assert not errors
    assert HumanLabel.objects.filter(rater__startswith="concurrent-").count() == 8
    assert kept(reviewed_dataset, data.run) == recount(reviewed_dataset, data.run)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's JIT")
def test_a_label_write_compiles_no_statement(labelled, reviewed_dataset, reviewer):
    """One item's counts never pay for JIT compilation (cells.item_cells): on this unanalysed
    test database it cost about 1.5 s per statement, twice per label write."""
    warm(reviewed_dataset, [labelled.run])
    label = HumanLabel.objects.filter(answer__query__dataset=reviewed_dataset).first()
    with transaction.atomic(), connection.cursor() as cursor:
        review.label_set(
            answer=label.answer, criterion=label.criterion, reviewer=reviewer, label="fail"
        )
        cursor.execute("SHOW jit")
        assert cursor.fetchone()[0] == "off"
    assert kept(reviewed_dataset, labelled.run) == recount(reviewed_dataset, labelled.run)


@pytest.mark.django_db(transaction=True)
@ROW_LOCKS_NEED_POSTGRESQL
def test_a_label_during_a_count_waits_and_then_moves_the_counted_cells(
    reviewed_dataset, monkeypatch
):
    """A reader counting the cells afresh holds the dataset's counters: a label written
    meanwhile waits for the count, so the cells are kept at the counters that are current
    when they are kept, and the label then moves them by its delta. Without it the cells
    were kept behind the label, every later reader counted again, several at once."""
    import time

    data = build_labelled(reviewed_dataset, queries=2, criteria=4, systems=2, seed=9)
    rater = UserFactory(username="during-count")
    services.dataset_set_role(dataset=reviewed_dataset, user=rater, role=roles.DatasetRole.REVIEWER)
    counting, errors = threading.Event(), []
    original = agreement_kept.counted_cells

    def slow_count(*args):
        counting.set()
        time.sleep(0.5)
        return original(*args)

    monkeypatch.setattr(agreement_kept, "counted_cells", slow_count)

    def read() -> None:
        try:
            selectors.agreement_report(reviewed_dataset, data.run.pk)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            connection.close()

    reader = threading.Thread(target=read)
    reader.start()
    assert counting.wait(10)
    label = HumanLabel.objects.filter(answer__query__dataset=reviewed_dataset).first()
    started = time.monotonic()
    review.label_set(answer=label.answer, criterion=label.criterion, reviewer=rater,
                     label="fail")  # fmt: skip
    waited = time.monotonic() - started
    reader.join(10)
    assert not errors and waited > 0.2  # it waited for the count
    assert kept(reviewed_dataset, data.run) == recount(reviewed_dataset, data.run)


def test_the_item_is_counted_before_the_counters_are_locked(labelled, reviewed_dataset, reviewer):
    """The item's counts before the write are read before the bump that locks the dataset's
    counter row, so other reviewers' labels wait for fewer statements; under the lock only
    its counts after the write remain."""
    warm(reviewed_dataset, [labelled.run])
    label = HumanLabel.objects.filter(answer__query__dataset=reviewed_dataset).first()
    with CaptureQueriesContext(connection) as queries:
        review.label_set(
            answer=label.answer, criterion=label.criterion, reviewer=reviewer, label="fail"
        )
    statements = [q["sql"] for q in queries.captured_queries]
    bump = next(n for n, s in enumerate(statements) if "INTO evaluation_reviewrevision" in s)
    counts = [n for n, s in enumerate(statements) if s.lstrip().startswith("WITH")
              and "evaluation_humanlabel l" in s]  # fmt: skip
    assert [n < bump for n in counts] == [True, False]  # before and after, once each
    assert kept(reviewed_dataset, labelled.run) == recount(reviewed_dataset, labelled.run)


@pytest.mark.django_db(transaction=True)
@ROW_LOCKS_NEED_POSTGRESQL
def test_a_label_committed_between_the_early_count_and_the_lock_is_counted_once(
    reviewed_dataset, monkeypatch
):
    """Another reviewer labels the same item after this write counted it and before it
    locked the counters: the early count misses that label, so it is counted again under
    the lock, and the kept counts still equal a recount (with the early count they would
    hold the other label twice)."""
    data = build_labelled(reviewed_dataset, queries=2, criteria=4, systems=2, seed=9)
    first, second = (UserFactory(username=f"between-{n}") for n in range(2))
    for user in (first, second):
        services.dataset_set_role(
            dataset=reviewed_dataset, user=user, role=roles.DatasetRole.REVIEWER
        )
    warm(reviewed_dataset, [data.run])
    item = HumanLabel.objects.filter(answer__query__dataset=reviewed_dataset).first()
    original, errors, cut_in = events.bump, [], []

    def other_label() -> None:
        try:
            review.label_set(answer=item.answer, criterion=item.criterion, reviewer=second,
                             label="pass")  # fmt: skip
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            connection.close()

    def bump_after_another_label(dataset_id, event):
        if not cut_in:  # the first write's bump only
            cut_in.append(True)
            other = threading.Thread(target=other_label)
            other.start()
            other.join(10)
        return original(dataset_id, event)

    monkeypatch.setattr(events, "bump", bump_after_another_label)
    before = number(reviewed_dataset)
    review.label_set(answer=item.answer, criterion=item.criterion, reviewer=first, label="fail")
    assert not errors and cut_in
    assert number(reviewed_dataset) == before + 2
    labels = HumanLabel.objects.filter(answer=item.answer, criterion=item.criterion)
    assert {"between-0", "between-1"} <= set(labels.values_list("rater", flat=True))
    assert kept(reviewed_dataset, data.run) == recount(reviewed_dataset, data.run)
