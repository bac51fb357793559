"""Two reviewers adjudicating the same item at once, from two threads on two database
connections (PostgreSQL: the row lock and the unique index are what is tested). The second
gets a conflict carrying the first's decision; nothing is lost or silently overwritten."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction

from annotation import roles, services
from evaluation.labels.models import Adjudication
from evaluation.review import services as review
from tests.factories import UserFactory
from tests.support.builders import checklisted_query

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="SQLite serialises writers on one file lock: row locks need PostgreSQL",
    ),
]


@pytest.fixture
def item(dataset, reviewer):
    services.dataset_set_role(dataset=dataset, user=reviewer, role=roles.DatasetRole.REVIEWER)
    second = UserFactory(username="second-reviewer")
    services.dataset_set_role(dataset=dataset, user=second, role=roles.DatasetRole.REVIEWER)
    made = checklisted_query(dataset, criteria=1, answers=1)
    return made.answers[0], made.criteria[0], reviewer, second


def in_thread(target, results: dict, name: str) -> threading.Thread:
    def run() -> None:
        try:
            results[name] = target()
        except Exception as exc:  # the conflict is a result, not a crash
            results[name] = exc
        finally:
            connection.close()  # each thread opened its own connection

    thread = threading.Thread(target=run, name=name)
    thread.start()
    return thread


@pytest.mark.parametrize("existing", [False, True], ids=["first-decision", "change-decision"])
def test_the_second_waits_for_the_first_then_gets_a_conflict(item, existing):
    answer, criterion, first, second = item
    seen = None
    if existing:
        seen = review.adjudicate(
            answer=answer, criterion=criterion, by=first, label="pass", expected_version=None
        ).version
    first_wrote, release = threading.Event(), threading.Event()
    results: dict = {}

    def first_decides():
        # Decide, then hold the transaction open: the row (or the unique index entry) stays
        # locked until `release`, so the second decision must wait for it.
        with transaction.atomic():
            decision = review.adjudicate(
                answer=answer, criterion=criterion, by=first, label="fail",
                reason="Figure missing.", expected_version=seen,
            )  # fmt: skip
            first_wrote.set()
            release.wait(10)
        return decision

    def second_decides():
        first_wrote.wait(10)
        return review.adjudicate(
            answer=answer, criterion=criterion, by=second, label="pass",
            reason="Looks fine.", expected_version=seen,
        )  # fmt: skip

    threads = [
        in_thread(first_decides, results, "first"),
        in_thread(second_decides, results, "second"),
    ]
    first_wrote.wait(10)
    time.sleep(0.5)
    assert "second" not in results, "the second decision did not wait for the first"
    release.set()
    for thread in threads:
        thread.join(20)
    conflict = results["second"]
    assert isinstance(conflict, review.AdjudicationConflict), conflict
    assert (conflict.current.label, conflict.current.reason, conflict.current.decided_by) == (
        "fail", "Figure missing.", first,
    )  # fmt: skip
    stored = Adjudication.objects.get()
    assert (stored.label, stored.decided_by, stored.version) == (
        "fail", first, 2 if existing else 1,
    )  # fmt: skip


def test_decisions_started_together_never_overwrite_each_other(item):
    answer, criterion, first, second = item
    for round_ in range(5):
        Adjudication.objects.all().delete()
        barrier = threading.Barrier(2)
        results: dict = {}

        def decide(user, label, barrier=barrier):
            barrier.wait(10)
            return review.adjudicate(
                answer=answer, criterion=criterion, by=user, label=label, expected_version=None
            )

        threads = [
            in_thread(lambda: decide(first, "fail"), results, "first"),
            in_thread(lambda: decide(second, "pass"), results, "second"),
        ]
        for thread in threads:
            thread.join(20)
        won = [v for v in results.values() if isinstance(v, Adjudication)]
        lost = [v for v in results.values() if isinstance(v, review.AdjudicationConflict)]
        assert len(won) == 1 and len(lost) == 1, (round_, results)
        # The loser sees exactly the decision that stands.
        stored = Adjudication.objects.get()
        assert lost[0].current.pk == stored.pk and lost[0].current.label == won[0].label
        assert (stored.label, stored.version) == (won[0].label, 1)
