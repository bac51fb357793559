"""Reviewers' work is never deleted by an expert's edit (issue 13, point 3).

The probe reopened a submitted checklist and deleted a criterion: its human label, two
adjudications and two verdicts went with it; rewording a criterion kept the old labels on
the new text. Now a criterion carrying labels, adjudications or verdicts is archived instead
of deleted, and rewording it starts a new version while the work stays on the old wording.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import services
from annotation.models import Checklist, Criterion
from evaluation.labels.models import Adjudication, HumanLabel
from evaluation.review import services as review
from evaluation.runs.models import Verdict
from tests.factories import PanelFactory, external_judges
from tests.support.builders import checklisted_query, finished_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def reviewed(reviewed_dataset, reviewer, collaborator):
    """A reopened checklist by `collaborator` of 3 criteria; criterion 2 carries 1 label,
    1 adjudication and 3 verdicts."""
    made = checklisted_query(reviewed_dataset, criteria=3, answers=1, author=collaborator)
    criteria, (answer,) = made.criteria, made.answers
    second = criteria[1]
    review.label_set(answer=answer, criterion=second, reviewer=reviewer, label="pass")
    review.adjudicate(
        answer=answer, criterion=second, by=reviewer, label="pass", reason="ok",
        expected_version=None,
    )  # fmt: skip
    finished_run(
        reviewed_dataset,
        PanelFactory(judges=external_judges(3)),
        {(answer, second): ["pass", "fail", "pass"]},
    )
    checklist = second.checklist
    services.checklist_reopen(checklist=checklist, by=collaborator)
    return checklist, criteria, answer


def work_on(criterion: Criterion) -> tuple[int, int, int]:
    return (
        HumanLabel.objects.filter(criterion=criterion).count(),
        Adjudication.objects.filter(criterion=criterion).count(),
        Verdict.objects.filter(criterion=criterion).count(),
    )


def test_deleting_a_reviewed_criterion_archives_it(reviewed, collaborator):
    checklist, (first, second, third), _ = reviewed
    work = services.criterion_delete(criterion=second, by=collaborator)
    assert (work.labels, work.adjudications, work.verdicts) == (1, 1, 3)
    second.refresh_from_db()
    assert second.archived_at is not None
    assert work_on(second) == (1, 1, 3)
    active = list(checklist.criteria.active().order_by("position"))
    assert [(c.pk, c.position) for c in active] == [(first.pk, 1), (third.pk, 2)]
    event = checklist.events.order_by("-id").first()
    assert event.detail == "archived criterion 2 (1 label, 1 adjudication, 3 verdicts kept)"
    assert [c["id"] for c in event.snapshot] == [first.pk, third.pk]


def test_a_criterion_without_work_is_really_deleted(reviewed, collaborator):
    _checklist, (_first, _, third), _ = reviewed
    assert not services.criterion_delete(criterion=third, by=collaborator)
    assert not Criterion.objects.filter(pk=third.pk).exists()


def test_rewording_a_reviewed_criterion_starts_a_new_version(reviewed, collaborator):
    checklist, (_, second, _), _ = reviewed
    old_text = second.text
    new = services.criterion_update(
        criterion=second, by=collaborator, text="States the restated figure of the query."
    )
    assert new.pk != second.pk
    second.refresh_from_db()
    assert second.text == old_text and second.archived_at is not None
    assert work_on(second) == (1, 1, 3)  # the labels stay on the text they judged
    assert work_on(new) == (0, 0, 0)
    assert new.previous_version_id == second.pk and new.position == 2
    assert new.text == "States the restated figure of the query."
    # Editing the new version again changes it in place: nothing rests on it yet.
    again = services.criterion_update(criterion=new, by=collaborator, text="States it again.")
    assert again.pk == new.pk
    # Changing other fields of a reviewed criterion keeps it in place.
    first = checklist.criteria.active().get(position=1)
    assert services.criterion_update(criterion=first, by=collaborator, notes="n").pk == first.pk


def test_archived_criteria_are_hidden_from_the_editor_and_the_api(
    reviewed, collaborator, client, collaborator_api
):
    checklist, (_, second, _), _ = reviewed
    services.criterion_delete(criterion=second, by=collaborator)
    client.force_login(collaborator)
    page = client.get(reverse("checklist-detail", args=[checklist.pk])).content.decode()
    assert f'data-criterion="{second.pk}"' not in page
    body = collaborator_api.get(f"/api/checklists/{checklist.pk}/").json()
    assert second.pk not in [c["id"] for c in body["criteria"]]
    listed = collaborator_api.get("/api/criteria/", {"checklist": checklist.pk}).json()
    assert second.pk not in [c["id"] for c in listed["results"]]
    archived = collaborator_api.get(
        "/api/criteria/", {"checklist": checklist.pk, "archived": "true"}
    )
    assert [c["id"] for c in archived.json()["results"]] == [second.pk]
    one = collaborator_api.get(f"/api/criteria/{second.pk}/").json()
    assert one["archived_at"] is not None
    edit = collaborator_api.patch(f"/api/criteria/{second.pk}/", {"text": "x"}, format="json")
    assert edit.status_code == 409


def test_api_delete_answers_what_was_kept(reviewed, collaborator_api):
    _, (_, second, third), _ = reviewed
    response = collaborator_api.delete(f"/api/criteria/{second.pk}/")
    assert response.status_code == 200
    assert response.json() == {
        "archived": True, "id": second.pk, "labels": 1, "adjudications": 1, "verdicts": 3,
    }  # fmt: skip
    assert collaborator_api.delete(f"/api/criteria/{third.pk}/").status_code == 204


def test_api_reword_answers_with_the_new_version(reviewed, collaborator_api):
    _, (_, second, _), _ = reviewed
    response = collaborator_api.patch(
        f"/api/criteria/{second.pk}/", {"text": "States a new figure."}, format="json"
    )
    assert response.status_code == 200
    body = response.json()
    assert body["id"] != second.pk and body["previous_version"] == second.pk


def test_the_editor_warns_with_counts_before_either(reviewed, collaborator, client):
    checklist, (_first, _second, _), _ = reviewed
    client.force_login(collaborator)
    page = client.get(reverse("checklist-detail", args=[checklist.pk])).content.decode()
    assert "Reviewers' work rests on this wording: 1 label, 1 adjudication, 3 verdicts." in page
    assert "Criterion 2 carries 1 label, 1 adjudication, 3 verdicts: it will be archived" in page
    assert 'hx-confirm="Delete criterion 1?"' in page  # no work: a plain confirmation


def test_the_work_on_every_criterion_is_counted_in_one_query(reviewed, django_assert_num_queries):
    _checklist, criteria, _answer = reviewed
    with django_assert_num_queries(1):
        work = services.criteria_work(c.pk for c in criteria)
    assert {pk: (w.labels, w.adjudications, w.verdicts) for pk, w in work.items()} == {
        c.pk: work_on(c) for c in criteria
    }
    assert work_on(criteria[1]) == (1, 1, 3) and not work[criteria[0].pk]
    assert services.criteria_work([]) == {}


def test_the_editor_swaps_in_the_new_version_row(reviewed, collaborator, client):
    checklist, (_, second, _), _ = reviewed
    client.force_login(collaborator)
    data = {"text": "States a reworded figure.", "kind": "fact", "weight": "1", "notes": ""}
    response = client.post(
        reverse("criterion-update", args=[second.pk]), data, HTTP_HX_REQUEST="true"
    )
    new = checklist.criteria.active().get(position=2)
    assert new.pk != second.pk
    assert response["HX-Retarget"] == f"#criterion-{second.pk}"
    assert f'id="criterion-{new.pk}"' in response.content.decode()
    # An autosave still in flight to the old id edits the new version.
    data["text"] = "States a reworded figure, twice."
    client.post(reverse("criterion-update", args=[second.pk]), data, HTTP_HX_REQUEST="true")
    new.refresh_from_db()
    assert new.text == "States a reworded figure, twice."
    assert checklist.criteria.active().count() == 3


def test_criterion_objects_active_is_what_runs_should_select(reviewed, collaborator):
    checklist, (first, second, third), _ = reviewed
    services.criterion_delete(criterion=second, by=collaborator)
    assert set(Criterion.objects.active().filter(checklist=checklist)) == {first, third}
    assert Checklist.objects.get(pk=checklist.pk).criteria.count() == 3  # all kept


# The runs package selects criteria in one place, scope.scored_criteria(): new runs leave
# archived criteria out, while a finished run's page still shows those it judged.
def test_new_runs_leave_archived_criteria_out(reviewed, collaborator):
    from evaluation.runs.scope import criteria_of

    checklist, (first, second, third), _ = reviewed
    services.criterion_delete(criterion=second, by=collaborator)
    Checklist.objects.filter(pk=checklist.pk).update(status=Checklist.Status.SUBMITTED)
    selected = {c.pk for c in criteria_of([checklist.query_id])[checklist.query_id]}
    assert selected == {first.pk, third.pk}


def test_a_finished_run_still_shows_its_verdicts_on_an_archived_wording(reviewed, collaborator):
    """Passes today and must keep passing once runs leave archived criteria out: a run's
    answer page shows the criteria it judged (filter with Q(verdicts__run=run))."""
    from evaluation.runs.models import Run
    from evaluation.runs.selectors import answer_verdicts

    checklist, (first, second, third), answer = reviewed
    run = Run.objects.get()
    new = services.criterion_update(criterion=second, by=collaborator, text="States anew.")
    Checklist.objects.filter(pk=checklist.pk).update(status=Checklist.Status.SUBMITTED)
    shown = [c.criterion.pk for _, rows in answer_verdicts(run, answer) for c in rows]
    assert second.pk in shown  # judged in this run, archived since
    assert set(shown) == {first.pk, second.pk, new.pk, third.pk}
    assert len(shown) == 4


def test_a_dataset_with_reworded_criteria_can_still_be_deleted(reviewed, collaborator):
    """The new wording names the archived one (previous_version): deleting the archived
    wording alone is refused, but deleting its checklist's dataset takes both, with the
    dataset's review revision (no orphan row left behind for the commit to trip on)."""
    from django.db.models import RestrictedError

    from evaluation.kept.models import ReviewRevision

    checklist, (_, second, _), _ = reviewed
    services.criterion_update(criterion=second, by=collaborator, text="Reworded.")
    second.refresh_from_db()
    with pytest.raises(RestrictedError):
        second.delete()
    dataset = checklist.query.dataset
    assert ReviewRevision.objects.filter(dataset=dataset).exists()
    dataset.delete()
    assert not Criterion.objects.filter(checklist=checklist).exists()
    assert not ReviewRevision.objects.filter(dataset_id=dataset.pk).exists()
