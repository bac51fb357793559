"""The review queues are kept in order as rows between requests (issue 14): a page reads a
slice of them, and a kept order is never served once what it was computed from changed
(labels, adjudications, answers, the label policy, runs); a running run is never kept. The
"next item" costs the same number of queries for 10 items as for 1,000."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation import roles
from annotation.services import dataset_create, dataset_set_role
from evaluation.kept.models import KeptFigure, KeptQueueRow
from evaluation.labels.models import Adjudication, HumanLabel
from evaluation.review import filters as queue_filters
from evaluation.review import selectors
from evaluation.runs.models import Run
from tests.evaluation.agreement.labelled import build_labelled
from tests.evaluation.review.queue_order import by_priority, keys
from tests.factories import AnswerFactory
from tests.support.builders import human_label, written

pytestmark = pytest.mark.django_db


def kept_headers(dataset, kind: str, run=None) -> list[KeptFigure]:
    """The headers kept for the queue `kind` (of `run`, or of every finished run)."""
    return list(KeptFigure.objects.filter(dataset=dataset, kind=kind, run_id=run and run.pk))


def test_an_adjudication_or_a_label_is_in_the_next_read_and_the_old_order_is_gone(
    workload, reviewed_dataset, reviewer, owner
):
    a1, a2, c = workload["a1"], workload["a2"], workload["c"]
    before = selectors.disagreement_queue(reviewed_dataset, reviewer)
    assert keys(before.items)[0] == (a1.pk, c[2].pk) and before.adjudicated == 1
    (old,) = kept_headers(reviewed_dataset, "disagreement-queue")
    Adjudication.objects.create(answer=a1, criterion=c[2], label="pass", decided_by=owner)
    written(a1.pk, adjudication=True)
    after = selectors.disagreement_queue(reviewed_dataset, reviewer)
    assert (a1.pk, c[2].pk) not in keys(after.items) and after.adjudicated == 2
    assert len(after.items) == len(before.items) - 1
    # The old order and its rows are deleted with the new one kept: none is left to read.
    (new,) = kept_headers(reviewed_dataset, "disagreement-queue")
    assert new.pk != old.pk and not KeptQueueRow.objects.filter(kept_id=old.pk).exists()
    # A human now contradicts the unanimous pass on a1·c4: it joins the queue.
    human_label(a1, c[4], "owner", "fail")
    assert (a1.pk, c[4].pk) in keys(selectors.disagreement_queue(reviewed_dataset, reviewer).items)

    reviewed_dataset.label_policy = "all"
    assert keys(selectors.labelling_queue(reviewed_dataset, reviewer)) == [(a1.pk,), (a2.pk,)]
    for n in (0, 1, 2):  # a1 now has more human labels than a2: a2 comes first
        human_label(a1, c[n], "owner", "pass")
    items = selectors.labelling_queue(reviewed_dataset, reviewer)
    assert keys(items) == [(a2.pk,), (a1.pk,)]
    assert items[1].facts.labels == 6 and items[1].mine == 2


def test_a_new_answer_and_a_new_policy_are_in_the_next_read(
    workload, reviewed_dataset, reviewer, share_alone
):
    a1, a2 = workload["a1"], workload["a2"]
    reviewed_dataset.label_policy = "all"
    assert len(selectors.labelling_queue(reviewed_dataset, reviewer)) == 2
    added = AnswerFactory(query=a1.query)
    queue = selectors.labelling_queue(reviewed_dataset, reviewer)
    # No label and never judged: it needs labels most, before a1 (2 labels) and a2 (4).
    assert keys(queue) == [(added.pk,), (a1.pk,), (a2.pk,)]
    assert queue[0].run is None and queue[0].facts.uncertainty is None
    reviewed_dataset.label_policy, reviewed_dataset.label_share = "uncertain", 0.5
    # Half of the two judged answers (the new one has no vote): the first by priority.
    first = by_priority(reviewed_dataset, {a1: (1 / 3, 7), a2: (2 / 9, 3)})[0]
    assert keys(selectors.labelling_queue(reviewed_dataset, reviewer)) == [(first,)]


def test_a_running_run_is_never_kept(workload, reviewed_dataset, reviewer):
    a1, c = workload["a1"], workload["c"]
    running = Run.objects.get(dataset=reviewed_dataset, status=Run.Status.RUNNING)
    assert keys(selectors.disagreement_queue(reviewed_dataset, reviewer, run=running).items) == []
    # A vote arrives while it runs (its status, attempt and finish time do not move).
    vote = running.verdicts.order_by("pk").first()
    vote.outcome = "pass"
    vote.save()
    queue = selectors.disagreement_queue(reviewed_dataset, reviewer, run=running)
    assert keys(queue.items) == [(a1.pk, c[0].pk)]
    # Each read replaced the previous one's rows: one order of the running run is stored.
    assert len(kept_headers(reviewed_dataset, "disagreement-queue", running)) == 1


def test_slices_filters_and_mine_read_the_kept_rows(workload, reviewed_dataset, reviewer):
    from evaluation.review import services

    a1, a2, c = workload["a1"], workload["a2"], workload["c"]
    whole = keys(selectors.disagreement_queue(reviewed_dataset, reviewer).items)
    items = selectors.disagreement_queue(reviewed_dataset, reviewer).items
    assert [i.key for i in items[1:3]] == whole[1:3] and items[-1].key == whole[-1]
    assert items[4:4] == [] and len(items) == 5
    with pytest.raises(IndexError):
        items[5]
    narrowed, _ = queue_filters.filtered_queue(
        reviewed_dataset, reviewer, queue="disagreement",
        filters=queue_filters.QueueFilters(system=a2.system_id),
    )  # fmt: skip
    assert keys(narrowed) == [k for k in whole if k[0] == a2.pk] and len(narrowed) == 2
    services.assignment_set(
        queue="disagreement", answer=a2, criterion=c[1], assignee=reviewer, by=reviewer
    )
    following, position = queue_filters.next_item(
        reviewed_dataset, reviewer, queue="disagreement", current=(a1.pk, c[2].pk),
        filters=queue_filters.QueueFilters(system=a2.system_id),
    )  # fmt: skip
    # Not in the filtered queue: its first item, X of N counted within the filter.
    assert following.key == whole[1] == (a2.pk, c[0].pk) and position == (1, 2)
    # The only item assigned to the reviewer is the current one: nothing follows it.
    assert (
        queue_filters.next_item(
            reviewed_dataset, reviewer, queue="disagreement", current=(a2.pk, c[1].pk), mine=True
        )
        is None
    )


def _next_counts(client, dataset, user) -> dict[str, int]:
    # From the first item of each queue: the next one is in the first batch read.
    (labelled,) = selectors.labelling_queue(dataset, user)[0].key
    answer, criterion = selectors.disagreement_queue(dataset, user).items[0].key
    url = reverse("review-next", args=[dataset.pk])
    found = {}
    for name, query in {
        "next to label": f"?queue=labelling&answer={labelled}",
        "next disagreement": f"?queue=disagreement&answer={answer}&criterion={criterion}",
        "skip, filtered": f"?queue=disagreement&answer={answer}&criterion={criterion}&skip=1&q=a",
    }.items():
        client.get(url + query)  # the first read keeps the order
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url + query).status_code == 302, name
        found[name] = len(captured)
    return found


def test_next_item_query_counts_stay_flat_from_10_to_1000_items(client, owner, reviewer):
    client.force_login(reviewer)
    small = dataset_create(name="Ten items", by=owner)
    big = dataset_create(name="A thousand items", by=owner)
    for dataset in (small, big):
        dataset_set_role(dataset=dataset, user=reviewer, role=roles.DatasetRole.REVIEWER)
        dataset.label_policy = "all"
        dataset.save()
    build_labelled(small, queries=1, criteria=5, systems=2, seed=1)
    build_labelled(big, queries=10, criteria=10, systems=10, seed=2)
    few = _next_counts(client, small, reviewer)
    many = _next_counts(client, big, reviewer)
    assert many == few
    assert max(many.values()) <= 20, many


def test_next_after_a_label_reads_the_order_kept_before_it_without_ordering_again(
    workload, reviewed_dataset, reviewer, owner
):
    """Label, then "next": the order kept before the label serves, so the reviewer does not
    wait for the queue to be ordered again at every item; what it gives is checked live."""
    queue = selectors.disagreement_queue(reviewed_dataset, reviewer)
    order = keys(queue.items)
    assert len(order) >= 3
    (header,) = kept_headers(reviewed_dataset, "disagreement-queue")
    first, second, third = order[:3]
    # The reviewer decides the first item and someone else the second, meanwhile.
    for answer_id, criterion_id in (first, second):
        Adjudication.objects.create(
            answer_id=answer_id, criterion_id=criterion_id, label="pass", decided_by=owner
        )
        written(answer_id, adjudication=True)
    item, _position = queue_filters.next_item(
        reviewed_dataset, reviewer, queue="disagreement", current=first
    )
    assert item.key == third  # the second was decided meanwhile: skipped, live
    assert kept_headers(reviewed_dataset, "disagreement-queue") == [header]  # not ordered again
    # The queue page itself shows the current order.
    assert first not in keys(selectors.disagreement_queue(reviewed_dataset, reviewer).items)


def mark(answer, criterion, user) -> None:
    HumanLabel.objects.update_or_create(
        answer=answer, criterion=criterion, rater=user.get_username(), defaults={"label": "pass"}
    )
    written(answer.pk)


def test_next_in_the_labelling_queue_skips_what_the_reader_labelled_since(
    workload, reviewed_dataset, reviewer
):
    reviewed_dataset.label_policy = "all"
    reviewed_dataset.save(update_fields=["label_policy"])
    a1, a2, c = workload["a1"], workload["a2"], workload["c"]
    assert keys(selectors.labelling_queue(reviewed_dataset, reviewer)) == [(a1.pk,), (a2.pk,)]
    (header,) = kept_headers(reviewed_dataset, "labelling-queue")
    for criterion in c:  # the reviewer labels all of a2: it is done for them
        mark(a2, criterion, reviewer)
    item, _ = queue_filters.next_item(reviewed_dataset, reviewer, queue="labelling", current=())
    assert item.key == (a1.pk,)
    assert kept_headers(reviewed_dataset, "labelling-queue") == [header]
    for criterion in c:
        mark(a1, criterion, reviewer)
    # Nothing left in the order kept before: confirmed on the current order, then none.
    assert (
        queue_filters.next_item(reviewed_dataset, reviewer, queue="labelling", current=()) is None
    )


def test_a_changed_run_is_never_answered_from_the_order_kept_before(
    workload, reviewed_dataset, reviewer
):
    selectors.disagreement_queue(reviewed_dataset, reviewer)
    (header,) = kept_headers(reviewed_dataset, "disagreement-queue")
    run = workload["latest"]
    run.attempt += 1
    run.save(update_fields=["attempt"])
    queue_filters.next_item(reviewed_dataset, reviewer, queue="disagreement", current=())
    (now,) = kept_headers(reviewed_dataset, "disagreement-queue")
    assert now.pk != header.pk


def test_each_answers_uncertainty_is_kept_per_answer_until_a_run_moves(
    workload, reviewed_dataset, reviewer
):
    """The labelling queue's uncertainties are kept one row per graded answer (the vote
    splits they come from are many more): a second order of the queue reads them without
    counting the splits again; a run that moves makes them counted again."""
    a1, a2 = workload["a1"], workload["a2"]
    reviewed_dataset.label_policy, reviewed_dataset.label_share = "uncertain", 1.0
    first = list(selectors.labelling_queue(reviewed_dataset, reviewer))
    (kept,) = KeptFigure.objects.filter(dataset=reviewed_dataset, kind="queue-uncertainty")
    kept_rows = {row[0]: row[2:] for row in kept.cells}
    assert kept_rows == {a1.pk: [pytest.approx(1 / 3), 7], a2.pk: [pytest.approx(2 / 9), 3]}
    shown = {i.answer_id: i.facts.uncertainty for i in first}
    assert shown == {a1.pk: kept_rows[a1.pk][0], a2.pk: kept_rows[a2.pk][0]}

    KeptFigure.objects.filter(kind="labelling-queue").delete()  # the order counted again
    with CaptureQueriesContext(connection) as queries:
        again = list(selectors.labelling_queue(reviewed_dataset, reviewer))
    assert keys(again) == keys(first) and len(first) == 2
    assert not [q for q in queries.captured_queries if "evaluation_verdict v" in q["sql"]]

    run = workload["latest"]
    run.attempt += 1
    run.save(update_fields=["attempt"])
    selectors.labelling_queue(reviewed_dataset, reviewer)
    (now,) = KeptFigure.objects.filter(dataset=reviewed_dataset, kind="queue-uncertainty")
    assert now.pk != kept.pk  # the old state's row replaced by the new one
