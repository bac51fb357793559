"""One checklist per (query, author), and a submitted checklist never changed by a racing
request (issue 13, point 2).

The probe sent two identical `POST /api/checklists/` at once: both answered 201 with the same
id and one checklist of 14 criteria with duplicate positions; racing submit=true against
submit=false once appended a criterion to a submitted checklist, skipping validation, and
other times gave a 500. The races run on real threads against the real database: on
PostgreSQL the two requests are truly concurrent (CI), on SQLite they serialise.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from rest_framework.test import APIClient

from annotation import services
from annotation.models import Checklist, ChecklistEvent
from annotation.services.checklists import CriterionData
from tests.factories import QueryFactory, source_types, valid_criteria


def payload(query, *, submit: bool) -> dict:
    criteria = [
        {"text": c.text, "kind": c.kind, "source_types": [st.slug for st in c.source_types]}
        for c in valid_criteria()
    ]
    return {"query": query.pk, "criteria": criteria, "submit": submit}


def at_once(user, bodies: list[dict]) -> list[int]:
    """POST the bodies to /api/checklists/ from one thread each, released together."""
    barrier = threading.Barrier(len(bodies))
    statuses: list[int] = [0] * len(bodies)

    def send(i: int, body: dict) -> None:
        client = APIClient()
        client.force_authenticate(user)
        try:
            barrier.wait(timeout=10)
            statuses[i] = client.post("/api/checklists/", body, format="json").status_code
        finally:
            connection.close()

    threads = [threading.Thread(target=send, args=(i, b)) for i, b in enumerate(bodies)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return statuses


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("submits", [(False, False), (True, True), (True, False)])
def test_concurrent_creates_give_one_checklist_and_one_409(dataset, collaborator, submits):
    for _ in range(3):  # a race may not bite every time; three rounds catch the old bug
        query = QueryFactory(dataset=dataset)
        statuses = at_once(collaborator, [payload(query, submit=s) for s in submits])
        assert sorted(statuses) == [201, 409], statuses
        checklist = Checklist.objects.get(query=query, author=collaborator)
        positions = list(checklist.criteria.order_by("position").values_list("position", flat=True))
        assert positions == list(range(1, len(valid_criteria()) + 1))
        assert checklist.events.filter(action=ChecklistEvent.Action.CREATED).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_submitted_checklist_is_never_changed_by_a_racing_edit(dataset, collaborator):
    """Submit and add a criterion at once, many times: either the criterion came first (and
    was validated with the rest) or it was refused; the submitted snapshot is the truth."""
    for _ in range(4):
        query = QueryFactory(dataset=dataset)
        checklist = services.checklist_create_with_criteria(
            query=query, by=collaborator, criteria=valid_criteria()
        )
        barrier = threading.Barrier(2)
        outcomes: dict[str, object] = {}

        def submit(checklist=checklist, barrier=barrier, outcomes=outcomes) -> None:
            try:
                barrier.wait(timeout=10)
                services.checklist_submit(checklist=checklist, by=collaborator)
                outcomes["submit"] = "ok"
            except Exception as exc:
                outcomes["submit"] = exc
            finally:
                connection.close()

        def add(checklist=checklist, barrier=barrier, outcomes=outcomes) -> None:
            try:
                barrier.wait(timeout=10)
                data = CriterionData(
                    text="States the Q3 operating margin of 31%.",
                    source_types=source_types("earnings-release"),
                )
                services.criterion_add(checklist=checklist, by=collaborator, data=data)
                outcomes["add"] = "ok"
            except services.ChecklistNotEditable as exc:
                outcomes["add"] = exc
            finally:
                connection.close()

        threads = [threading.Thread(target=submit), threading.Thread(target=add)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert outcomes["submit"] == "ok", outcomes
        checklist.refresh_from_db()
        submitted = checklist.events.filter(action=ChecklistEvent.Action.SUBMITTED).get()
        stored = [c.pk for c in checklist.criteria.active().order_by("position")]
        assert [c["id"] for c in submitted.snapshot] == stored, outcomes


@pytest.mark.django_db
def test_an_edit_holding_a_stale_checklist_is_refused(dataset, collaborator):
    """The deterministic form of the race: the edit loaded the checklist as a draft, the
    submit committed, then the edit runs. Its status is read again under the lock."""
    query = QueryFactory(dataset=dataset)
    checklist = services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria()
    )
    stale = Checklist.objects.get(pk=checklist.pk)
    criterion = checklist.criteria.first()
    services.checklist_submit(checklist=checklist, by=collaborator)
    data = CriterionData(text="States the Q3 operating margin.", kind="fact")
    with pytest.raises(services.ChecklistNotEditable):
        services.criterion_add(checklist=stale, by=collaborator, data=data)
    criterion.checklist = stale
    with pytest.raises(services.ChecklistNotEditable):
        services.criterion_update(criterion=criterion, by=collaborator, text="Changed.")
    with pytest.raises(services.ChecklistNotEditable):
        services.criterion_delete(criterion=criterion, by=collaborator)
    assert checklist.criteria.count() == len(valid_criteria())
