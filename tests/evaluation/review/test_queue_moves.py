"""A label or an adjudication moves the kept queue orders with the one row it changes
(evaluation.review.moves) instead of leaving the next reader to order the whole queue
again: after every kind of review write, the order kept for the new counters exists before
anyone reads it, is the same header as before (not a refill), and equals a refill, row for
row, for every run and without one; an order kept at other counters is never patched; two
reviewers labelling at once (PostgreSQL) leave orders equal to a refill."""

from __future__ import annotations

import random
import threading

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from annotation import roles, services
from annotation.models import Criterion
from evaluation.kept.counters import counters
from evaluation.kept.models import KeptFigure, KeptQueueRow
from evaluation.labels.models import HumanLabel
from evaluation.review import kept as queue_rows
from evaluation.review import selectors
from evaluation.review import services as review
from tests.evaluation.agreement.labelled import build_labelled
from tests.factories import UserFactory
from tests.support.builders import written
from tests.support.review_writes import every_kind_of_write, version

KINDS = ("labelling-queue", "disagreement-queue")
FIELDS = (
    "sort_key", "adjudicated", "answer_id", "criterion_id", "run_id", "outcome", "passes",
    "fails", "invalid", "human_pass", "human_fail", "labels", "uncertainty",
)  # fmt: skip


@pytest.fixture
def labelled(reviewed_dataset):
    reviewed_dataset.label_policy = "all"
    reviewed_dataset.save()
    return build_labelled(reviewed_dataset, queries=3, criteria=5, systems=2, seed=3)


def read_queues(dataset, user, run=None) -> None:
    """Read both queues (keeping their orders), as a queue page does."""
    len(selectors.labelling_queue(dataset, user, run=run))
    len(selectors.disagreement_queue(dataset, user, run=run).items)


def headers(dataset) -> dict[tuple[str, int | None], KeptFigure]:
    return {
        (h.kind, h.run_id): h for h in KeptFigure.objects.filter(dataset=dataset, kind__in=KINDS)
    }


def rows(header: KeptFigure) -> list[tuple]:
    found = KeptQueueRow.objects.filter(kept=header).order_by("adjudicated", "sort_key")
    return list(found.values_list(*FIELDS))


def refilled(dataset, user, runs) -> dict[tuple[str, int | None], tuple[dict, list[tuple]]]:
    """Every queue ordered afresh (in a transaction rolled back): its totals and rows."""
    found = {}
    with transaction.atomic():
        KeptFigure.objects.filter(dataset=dataset, kind__in=KINDS).delete()
        for run in runs:
            read_queues(dataset, user, run)
        for slot, header in headers(dataset).items():
            totals = {k: header.cells[k] for k in ("total", "adjudicated")}
            found[slot] = (totals, rows(header))
        transaction.set_rollback(True)
    return found


def assert_moved_to_a_refill(dataset, user, runs, kept_before: dict) -> None:
    """The orders kept for the current counters are the same headers as before the write,
    and equal a refill."""
    now = headers(dataset)
    assert {slot: h.pk for slot, h in now.items()} == {s: h.pk for s, h in kept_before.items()}
    current = counters(dataset.pk)
    for header in now.values():
        assert header.revision == current.number
    fresh = refilled(dataset, user, runs)
    for slot, header in now.items():
        totals = {k: header.cells[k] for k in ("total", "adjudicated")}
        assert (totals, rows(header)) == fresh[slot], slot


@pytest.mark.django_db
def test_every_review_write_moves_the_kept_orders_to_a_refill(labelled, reviewed_dataset, reviewer):
    runs = [None, labelled.run]
    for run in runs:
        read_queues(reviewed_dataset, reviewer, run)
    kept = headers(reviewed_dataset)
    assert len(kept) == 4
    # An item whose judges agree and nobody contradicts: a human contradiction queues it.
    label = HumanLabel.objects.filter(answer__query__dataset=reviewed_dataset).first()
    answer, criterion = label.answer, label.criterion
    writes = every_kind_of_write(answer, criterion, reviewer)
    for write in writes:
        write()
        assert_moved_to_a_refill(reviewed_dataset, reviewer, runs, kept)


@pytest.mark.django_db
def test_a_random_day_of_labelling_keeps_every_order_exact(labelled, reviewed_dataset, reviewer):
    second = UserFactory(username="second-reviewer")
    services.dataset_set_role(
        dataset=reviewed_dataset, user=second, role=roles.DatasetRole.REVIEWER
    )
    runs = [None, labelled.run]
    for run in runs:
        read_queues(reviewed_dataset, reviewer, run)
    kept = headers(reviewed_dataset)
    rng = random.Random(11)
    criteria = list(labelled.run.verdicts.values_list("answer", "criterion").distinct())
    items = [(a, c) for a, c in criteria]
    from evaluation.answers.models import Answer

    for _ in range(30):
        answer_id, criterion_id = rng.choice(items)
        answer, criterion = Answer.objects.get(pk=answer_id), Criterion.objects.get(pk=criterion_id)
        who = rng.choice([reviewer, second])
        action = rng.choice(["label", "label", "label", "delete", "adjudicate"])
        if action == "label":
            review.label_set(answer=answer, criterion=criterion, reviewer=who,
                             label=rng.choice(["pass", "fail"]))  # fmt: skip
        elif action == "delete":
            mine = HumanLabel.objects.filter(
                answer=answer, criterion=criterion, rater=who.get_username()
            ).first()
            if mine:
                review.label_delete(label=mine, by=who)
        else:
            review.adjudicate(answer=answer, criterion=criterion, by=who,
                              label=rng.choice(["pass", "fail"]),
                              expected_version=version(answer, criterion))  # fmt: skip
    assert_moved_to_a_refill(reviewed_dataset, reviewer, runs, kept)


@pytest.mark.django_db
def test_the_next_read_after_a_label_orders_nothing_again(labelled, reviewed_dataset, reviewer):
    read_queues(reviewed_dataset, reviewer)
    label = HumanLabel.objects.filter(answer__query__dataset=reviewed_dataset).first()
    review.label_set(
        answer=label.answer, criterion=label.criterion, reviewer=reviewer, label="fail"
    )
    with CaptureQueriesContext(connection) as read:
        read_queues(reviewed_dataset, reviewer)
    sql = " ".join(q["sql"] for q in read.captured_queries)
    assert "INSERT" not in sql and "evaluation_verdict" not in sql


@pytest.mark.django_db
def test_an_order_kept_at_other_counters_is_left_to_the_next_reader(
    labelled, reviewed_dataset, reviewer
):
    read_queues(reviewed_dataset, reviewer)
    stale = headers(reviewed_dataset)
    label = HumanLabel.objects.filter(answer__query__dataset=reviewed_dataset).first()
    # A write that bumps but moves nothing (an import's, a direct write's): the kept orders
    # are at old counters now, and the label after it must not patch them.
    HumanLabel.objects.filter(pk=label.pk).update(label="fail" if label.label == "pass" else "pass")
    written(label.answer_id)
    review.label_set(
        answer=label.answer, criterion=label.criterion, reviewer=reviewer, label="pass"
    )
    for slot, header in headers(reviewed_dataset).items():
        assert header.revision == stale[slot].revision and header.key == stale[slot].key
    read_queues(reviewed_dataset, reviewer)  # refilled, then equal to a refill
    fresh = refilled(reviewed_dataset, reviewer, [None])
    for slot, header in headers(reviewed_dataset).items():
        assert header.pk != stale[slot].pk
        assert rows(header) == fresh[slot][1]


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="SQLite serialises writers on one file lock: the revision row lock needs PostgreSQL",
)
def test_two_reviewers_labelling_at_once_leave_orders_equal_to_a_refill(reviewed_dataset):
    reviewed_dataset.label_policy = "all"
    reviewed_dataset.save()
    data = build_labelled(reviewed_dataset, queries=2, criteria=4, systems=2, seed=9)
    raters = [UserFactory(username=f"concurrent-{n}") for n in range(2)]
    for user in raters:
        services.dataset_set_role(
            dataset=reviewed_dataset, user=user, role=roles.DatasetRole.REVIEWER
        )
    read_queues(reviewed_dataset, raters[0])
    kept = headers(reviewed_dataset)
    items = list(
        data.run.verdicts.values_list("answer", "criterion")
        .distinct()
        .order_by("answer", "criterion")
    )[:8]
    from evaluation.answers.models import Answer

    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def label(user, mine) -> None:
        try:
            start.wait(10)
            for n, (answer_id, criterion_id) in enumerate(mine):
                review.label_set(answer=Answer.objects.get(pk=answer_id),
                                 criterion=Criterion.objects.get(pk=criterion_id),
                                 reviewer=user, label="pass" if n % 2 else "fail")  # fmt: skip
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [
        threading.Thread(target=label, args=(raters[0], items[:4])),
        threading.Thread(target=label, args=(raters[1], items[4:])),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors
    assert_moved_to_a_refill(reviewed_dataset, raters[0], [None], kept)


@pytest.mark.django_db
def test_a_reader_behind_a_label_gets_the_moved_order_not_a_refill(
    labelled, reviewed_dataset, reviewer
):
    """A reader that read the counters just before a label committed looks up the order at
    those counters: it gets the order the label moved past them, and fills nothing (a
    refill at the older counters would throw the moved order away, and the next reader
    would fill again)."""
    from evaluation.kept import readers
    from evaluation.review import kept as kept_orders

    read_queues(reviewed_dataset, reviewer)
    (header,) = [h for (kind, _), h in headers(reviewed_dataset).items() if kind == KINDS[1]]
    basis = readers.Basis(
        reviewed_dataset.pk, readers.DISAGREEMENT_QUEUE, None, "", header.cells["basis"], True
    )
    behind = readers.state_of(basis, counters(reviewed_dataset.pk))
    label = HumanLabel.objects.filter(answer__query__dataset=reviewed_dataset).first()
    review.label_set(
        answer=label.answer, criterion=label.criterion, reviewer=reviewer, label="fail"
    )

    def no_fill(header_id):
        raise AssertionError("ordered again")

    assert kept_orders.kept(behind, no_fill).pk == header.pk


@pytest.mark.django_db
def test_a_label_after_the_order_was_deleted_under_it_is_saved(
    labelled, reviewed_dataset, reviewer, monkeypatch
):
    """A reader filling the slot deletes the header a label is moving: the label is saved
    all the same, and the next reader orders the queue again."""
    from evaluation.review import moves

    read_queues(reviewed_dataset, reviewer)
    found = moves._move_labelling

    def deleted_meanwhile(header, *args):
        found(header, *args)
        KeptFigure.objects.filter(pk=header.pk).delete()

    monkeypatch.setattr(moves, "_move_labelling", deleted_meanwhile)
    label = HumanLabel.objects.filter(answer__query__dataset=reviewed_dataset).first()
    review.label_set(
        answer=label.answer, criterion=label.criterion, reviewer=reviewer, label="fail"
    )
    assert HumanLabel.objects.filter(answer=label.answer, rater="reviewer").exists()
    assert not any(kind == KINDS[0] for kind, _ in headers(reviewed_dataset))
    monkeypatch.undo()
    read_queues(reviewed_dataset, reviewer)
    fresh = refilled(reviewed_dataset, reviewer, [None])
    for slot, header in headers(reviewed_dataset).items():
        assert rows(header) == fresh[slot][1]


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="SQLite serialises writers on one file lock: the fill lock is PostgreSQL's",
)
def test_readers_filling_one_queue_fill_it_one_after_the_other(reviewed_dataset, monkeypatch):
    """Readers who find the order missing fill it one after another: a reader at newer
    counters (a label came meanwhile) waits for the one filling, instead of deleting its
    rows while it writes them (the two deadlocked under the mixed load); readers of the
    same state find it filled and read it (one fill)."""
    import time

    reviewed_dataset.label_policy = "all"
    reviewed_dataset.save()
    build_labelled(reviewed_dataset, queries=2, criteria=4, systems=2, seed=13)
    reader = UserFactory(username="reader")
    spans, errors = [], []
    filling = threading.Event()
    original = queue_rows.write_disagreements

    def slow_fill(*args, **kwargs):
        began = time.monotonic()
        filling.set()
        time.sleep(0.4)  # long enough for the others to find the order missing too
        found = original(*args, **kwargs)
        spans.append((began, time.monotonic()))
        return found

    monkeypatch.setattr(queue_rows, "write_disagreements", slow_fill)

    def read() -> None:
        try:
            len(selectors.disagreement_queue(reviewed_dataset, reader).items)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            connection.close()

    first = threading.Thread(target=read)
    first.start()
    assert filling.wait(10)
    same = threading.Thread(target=read)  # the same state: waits, then reads it
    same.start()
    label = HumanLabel.objects.filter(answer__query__dataset=reviewed_dataset).first()
    written(label.answer_id)  # a label written meanwhile: the next reader's state is newer
    newer = threading.Thread(target=read)
    newer.start()
    for thread in (first, same, newer):
        thread.join(30)
    assert not errors
    assert len(spans) == 2  # the first state's and the newer one's, not three
    (_, a_end), (b_start, _) = sorted(spans)
    assert b_start >= a_end  # one after the other
    (header,) = KeptFigure.objects.filter(dataset=reviewed_dataset, kind=KINDS[1])
    assert header.revision == counters(reviewed_dataset.pk).number


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="SQLite serialises writers on one file lock: the counters' hold is PostgreSQL's",
)
def test_a_label_commits_while_the_fill_counts_the_judges_votes(reviewed_dataset, monkeypatch):
    """The disagreement queue's fill counts the judges' votes (seconds over a month of
    nightly runs) before it holds the review counters: a label written meanwhile commits
    at once instead of waiting for that count, and the order kept is at the counters after
    it, equal to a refill. Before, every label waited for the whole fill (a label POST of
    5.5–7.3 s in the first loads after seeding the month)."""
    from evaluation.answers.models import Answer

    reviewed_dataset.label_policy = "all"
    reviewed_dataset.save()
    data = build_labelled(reviewed_dataset, queries=2, criteria=4, systems=2, seed=21)
    reader = UserFactory(username="reader")
    labeller = UserFactory(username="labeller")
    services.dataset_set_role(
        dataset=reviewed_dataset, user=labeller, role=roles.DatasetRole.REVIEWER
    )
    answer_id, criterion_id = data.run.verdicts.values_list("answer", "criterion").first()
    original = queue_rows.count_judged
    committed, errors = [], []

    def label() -> None:
        try:
            review.label_set(
                answer=Answer.objects.get(pk=answer_id),
                criterion=Criterion.objects.get(pk=criterion_id),
                reviewer=labeller, label="fail",
            )  # fmt: skip
            committed.append(counters(reviewed_dataset.pk).number)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            connection.close()

    def count_then_label(ranked) -> None:
        original(ranked)
        # Another reviewer labels now, between the judges' count and the fill's hold.
        writer = threading.Thread(target=label)
        writer.start()
        writer.join(10)
        assert not writer.is_alive(), "the label waited for the fill's count"

    monkeypatch.setattr(queue_rows, "count_judged", count_then_label)
    before = counters(reviewed_dataset.pk).number
    len(selectors.disagreement_queue(reviewed_dataset, reader).items)
    assert not errors
    assert committed == [before + 1]
    (header,) = KeptFigure.objects.filter(dataset=reviewed_dataset, kind=KINDS[1])
    assert header.revision == before + 1  # kept after the label, with it
    monkeypatch.setattr(queue_rows, "count_judged", original)  # the refill labels nothing
    fresh = refilled(reviewed_dataset, reader, [None])
    totals = {k: header.cells[k] for k in ("total", "adjudicated")}
    assert (totals, rows(header)) == fresh[(KINDS[1], None)]


@pytest.mark.django_db
def test_writes_on_answers_of_several_runs_move_the_order_over_every_run_to_a_refill(
    labelled, reviewed_dataset, reviewer
):
    """Over every run, each answer's row comes from its chosen run, the newest that judged
    it: a newer run judged half of the answers with other votes. A label or adjudication on
    an answer of either half moves the order to what a refill writes."""
    from datetime import timedelta

    from evaluation.answers.models import Answer
    from evaluation.runs.models import Run, Verdict

    older = labelled.run
    newer = Run.objects.create(
        dataset=reviewed_dataset, panel=older.panel, status=Run.Status.DONE,
        started_at=older.started_at, finished_at=older.finished_at + timedelta(days=1),
        snapshot=older.snapshot,
    )  # fmt: skip
    answers = sorted(set(older.verdicts.values_list("answer_id", flat=True)))
    rejudged = answers[::2]
    flip = {"pass": "fail", "fail": "pass"}
    Verdict.objects.bulk_create(
        Verdict(
            run=newer, answer_id=v.answer_id, criterion_id=v.criterion_id, judge_id=v.judge_id,
            sample=v.sample, outcome=flip.get(v.outcome, v.outcome) if n % 3 else v.outcome,
            rationale="", cache_key=f"newer-{v.pk}",
        )
        for n, v in enumerate(older.verdicts.filter(answer_id__in=rejudged).order_by("pk"))
    )  # fmt: skip
    runs = [None, older, newer]
    for run in runs:
        read_queues(reviewed_dataset, reviewer, run)
    kept = headers(reviewed_dataset)
    for answer_id in (rejudged[0], answers[1]):  # chosen: the newer run, then the older
        answer = Answer.objects.get(pk=answer_id)
        for criterion_id in list(
            older.verdicts.filter(answer_id=answer_id)
            .values_list("criterion_id", flat=True)
            .distinct()
        )[:2]:
            criterion = Criterion.objects.get(pk=criterion_id)
            review.label_set(answer=answer, criterion=criterion, reviewer=reviewer, label="fail")
            review.adjudicate(answer=answer, criterion=criterion, by=reviewer, label="pass",
                              expected_version=version(answer, criterion))  # fmt: skip
            assert_moved_to_a_refill(reviewed_dataset, reviewer, runs, kept)
