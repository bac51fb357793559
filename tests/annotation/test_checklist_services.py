"""Writing checklists: order, submission under the guideline, history."""

from __future__ import annotations

import pytest

from annotation import services
from annotation.models import Checklist, ChecklistEvent, Guideline
from annotation.services.checklists import CitationData, CriterionData
from tests.factories import source_types, valid_criteria

pytestmark = pytest.mark.django_db


@pytest.fixture
def checklist(query, collaborator):
    return services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria()
    )


def texts(checklist) -> list[str]:
    return list(checklist.criteria.order_by("position").values_list("text", flat=True))


def test_positions_follow_adds_moves_and_deletes(checklist, collaborator):
    first, second, third = checklist.criteria.order_by("position")[:3]
    services.criterion_move(criterion=third, by=collaborator, offset=-1)
    assert texts(checklist)[:3] == [first.text, third.text, second.text]
    services.criterion_delete(criterion=first, by=collaborator)
    assert list(checklist.criteria.values_list("position", flat=True)) == [1, 2, 3, 4, 5]
    added = services.criterion_add(
        checklist=checklist, by=collaborator, data=CriterionData(text="Lists the risks.")
    )
    assert added.position == 6


def test_move_at_the_ends_changes_nothing(checklist, collaborator):
    before = texts(checklist)
    top = checklist.criteria.get(position=1)
    services.criterion_move(criterion=top, by=collaborator, offset=-1)
    assert texts(checklist) == before


def test_submit_records_the_guideline_version(checklist, collaborator):
    report = services.checklist_submit(checklist=checklist, by=collaborator)
    checklist.refresh_from_db()
    assert not report.blocking
    assert checklist.status == Checklist.Status.SUBMITTED
    assert checklist.submitted_at and checklist.first_submitted_at
    assert checklist.guideline == Guideline.objects.get(name="Finance", version=1)


def test_submit_with_errors_is_refused_and_changes_nothing(checklist, collaborator):
    bad = checklist.criteria.get(position=2)
    services.criterion_update(criterion=bad, by=collaborator, text="Revenue of $4.12 billion.")
    with pytest.raises(services.ChecklistRejected) as refused:
        services.checklist_submit(checklist=checklist, by=collaborator)
    rules = {f.rule_id for f in refused.value.report.errors}
    assert "action-verb" in rules
    checklist.refresh_from_db()
    assert checklist.status == Checklist.Status.DRAFT


def test_citation_after_the_query_date_blocks_submission(checklist, collaborator, query):
    criterion = checklist.criteria.get(position=2)
    services.citation_add(
        criterion=criterion,
        by=collaborator,
        data=CitationData(
            title="Q3 release",
            source_type=source_types("earnings-release")[0],
            published_on=query.query_date.replace(year=query.query_date.year + 1),
        ),
    )
    with pytest.raises(services.ChecklistRejected) as refused:
        services.checklist_submit(checklist=checklist, by=collaborator)
    errors = refused.value.report.errors
    assert [f.rule_id for f in errors] == ["citation-after-query-date"]
    assert errors[0].criterion_key == str(criterion.pk)


def test_submitted_checklist_is_locked_until_reopened(checklist, collaborator):
    services.checklist_submit(checklist=checklist, by=collaborator)
    criterion = checklist.criteria.first()
    checklist.refresh_from_db()
    criterion.checklist = checklist
    with pytest.raises(services.ChecklistNotEditable):
        services.criterion_update(criterion=criterion, by=collaborator, text="Changes it.")
    services.checklist_reopen(checklist=checklist, by=collaborator)
    criterion.checklist.refresh_from_db()
    services.criterion_update(criterion=criterion, by=collaborator, text="States the change.")
    assert checklist.criteria.filter(text="States the change.").exists()


def test_history_keeps_snapshots_and_coalesces_autosaves(checklist, collaborator):
    criterion = checklist.criteria.get(position=2)
    for text in ("States Q3 revenue", "States Q3 revenue of", "States Q3 revenue of $4.1bn."):
        services.criterion_update(criterion=criterion, by=collaborator, text=text)
    services.checklist_submit(checklist=checklist, by=collaborator)
    actions = list(checklist.events.order_by("at", "id").values_list("action", flat=True))
    # created, one edit burst (bulk create + three autosaves coalesced), submitted
    assert actions == [
        ChecklistEvent.Action.CREATED,
        ChecklistEvent.Action.EDITED,
        ChecklistEvent.Action.SUBMITTED,
    ]
    submitted = checklist.events.get(action=ChecklistEvent.Action.SUBMITTED)
    assert submitted.snapshot[1]["text"] == "States Q3 revenue of $4.1bn."
    assert submitted.snapshot[1]["source_types"] == ["earnings-release"]


def test_one_checklist_per_expert_and_query(checklist, collaborator, query):
    with pytest.raises(services.ChecklistNotEditable):
        services.checklist_create_with_criteria(query=query, by=collaborator, criteria=[])


def test_guideline_config_is_validated_and_frozen_once_used(checklist, collaborator):
    from django.core.exceptions import ValidationError

    guideline = Guideline.objects.get(name="Finance", version=1)
    guideline.config = {**guideline.config, "rules": {"no-such-rule": {"enabled": False}}}
    with pytest.raises(ValidationError) as bad:
        guideline.full_clean()
    assert "no-such-rule" in str(bad.value)
    services.checklist_submit(checklist=checklist, by=collaborator)
    guideline.refresh_from_db()
    guideline.config = {**guideline.config, "min_criteria": 3}
    with pytest.raises(ValidationError, match="add a new version"):
        guideline.full_clean()
