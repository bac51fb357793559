"""The groups API (issue 23): a checklist's author creates, renames, reweights, reparents
and deletes its groups; nobody else may; a cycle, a zero weight and another checklist's
parent are refused with a clear error and change nothing."""

from __future__ import annotations

import pytest

from annotation import services
from annotation.models import CriterionGroup
from tests.factories import valid_criteria

pytestmark = pytest.mark.django_db
URL = "/api/groups/"


@pytest.fixture
def checklist(query, collaborator):
    return services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria()
    )


def test_the_author_builds_a_tree_through_the_api(collaborator_api, checklist):
    facts = collaborator_api.post(URL, {"checklist": checklist.pk, "title": "Facts", "weight": "2"})
    assert facts.status_code == 201, facts.content
    facts_id = facts.json()["id"]
    revenue = collaborator_api.post(
        URL, {"checklist": checklist.pk, "title": "Revenue", "parent": facts_id}
    )
    assert revenue.status_code == 201, revenue.content
    revenue_id = revenue.json()["id"]
    renamed = collaborator_api.patch(f"{URL}{revenue_id}/", {"title": "Sales", "weight": "3"})
    assert renamed.status_code == 200, renamed.content
    group = CriterionGroup.objects.get(pk=revenue_id)
    assert (group.title, float(group.weight), group.parent_id) == ("Sales", 3.0, facts_id)
    # Reparented to the top, then read back with the checklist.
    assert collaborator_api.patch(f"{URL}{revenue_id}/", {"parent": None}).status_code == 200
    listed = collaborator_api.get(f"/api/checklists/{checklist.pk}/").json()["groups"]
    assert {(g["title"], g["parent"]) for g in listed} == {("Facts", None), ("Sales", None)}
    assert collaborator_api.delete(f"{URL}{facts_id}/").status_code == 204
    assert list(CriterionGroup.objects.values_list("title", flat=True)) == ["Sales"]


def test_a_cycle_a_zero_weight_and_a_foreign_parent_are_refused(
    collaborator_api, checklist, collaborator, query
):
    top = collaborator_api.post(URL, {"checklist": checklist.pk, "title": "Top"}).json()["id"]
    child = collaborator_api.post(
        URL, {"checklist": checklist.pk, "title": "Child", "parent": top}
    ).json()["id"]
    cycle = collaborator_api.patch(f"{URL}{top}/", {"parent": child})
    assert cycle.status_code == 400
    assert "parent" in cycle.json()
    assert CriterionGroup.objects.get(pk=top).parent_id is None
    zero = collaborator_api.post(URL, {"checklist": checklist.pk, "title": "Z", "weight": "0"})
    assert zero.status_code == 400 and "weight" in zero.json()
    other_query = type(query).objects.create(
        dataset=query.dataset, text="Another query?", query_date=query.query_date
    )
    other = services.checklist_create_with_criteria(
        query=other_query, by=collaborator, criteria=valid_criteria()
    )
    foreign = collaborator_api.post(URL, {"checklist": other.pk, "title": "F", "parent": top})
    assert foreign.status_code == 400 and "parent" in foreign.json()
    assert CriterionGroup.objects.count() == 2


def test_only_the_author_changes_groups(owner_api, outsider_api, collaborator_api, checklist):
    made = collaborator_api.post(URL, {"checklist": checklist.pk, "title": "Mine"}).json()["id"]
    # The dataset's admin may read the checklist, not change its author's tree.
    assert owner_api.patch(f"{URL}{made}/", {"title": "Theirs"}).status_code == 403
    assert owner_api.post(URL, {"checklist": checklist.pk, "title": "X"}).status_code == 403
    # An outsider does not learn that the group exists.
    assert outsider_api.patch(f"{URL}{made}/", {"title": "Theirs"}).status_code == 404
    assert outsider_api.delete(f"{URL}{made}/").status_code == 404
    assert CriterionGroup.objects.get(pk=made).title == "Mine"


def test_an_outsider_cannot_tell_a_hidden_checklist_from_a_missing_one(
    outsider_api, collaborator_api, checklist
):
    hidden = outsider_api.post(URL, {"checklist": checklist.pk, "title": "X"})
    missing = outsider_api.post(URL, {"checklist": checklist.pk + 1000, "title": "X"})
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == missing.json()
    # A body that names no checklist, or not a number, is the body's error, for anyone.
    assert outsider_api.post(URL, {"title": "X"}).status_code == 400
    assert collaborator_api.post(URL, {"checklist": "abc", "title": "X"}).status_code == 400
    assert not CriterionGroup.objects.exists()


def test_a_submitted_checklists_groups_answer_409_and_stay(collaborator_api, checklist):
    """As docs/api.md#groups says: no group changes while the checklist is submitted."""
    made = collaborator_api.post(URL, {"checklist": checklist.pk, "title": "Mine"}).json()["id"]
    services.checklist_submit(checklist=checklist, by=checklist.author)
    detail = {"detail": "This checklist is submitted. Reopen it to change it."}
    for answer in (
        collaborator_api.post(URL, {"checklist": checklist.pk, "title": "New"}),
        collaborator_api.patch(f"{URL}{made}/", {"title": "Renamed"}),
        collaborator_api.delete(f"{URL}{made}/"),
    ):
        assert (answer.status_code, answer.json()) == (409, detail)
    assert list(CriterionGroup.objects.values_list("title", flat=True)) == ["Mine"]
