"""Criterion health in the checklist editor (issue 12, item 6; decision 0005): the author
sees the flags on their own criteria once the checklist is submitted, reviewers and admins
always; a draft's author and experts who may not read the checklist see nothing."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse
from django.utils import timezone

from annotation import roles, services
from annotation.models import Checklist
from evaluation.analytics.editor_health import checklist_health


@pytest.fixture
def known(known, reviewed_dataset):
    """The analytics dataset, its checklists' authors experts of it."""
    expert_group = Group.objects.get(name=roles.Group.EXPERT.value)
    for checklist in Checklist.objects.filter(pk__in=known.checklists):
        checklist.author.groups.add(expert_group)
        services.dataset_set_role(
            dataset=reviewed_dataset, user=checklist.author, role=roles.DatasetRole.EXPERT
        )
    return known


def _first(known) -> Checklist:
    return Checklist.objects.select_related("query__dataset", "author").get(
        pk=min(known.checklists)
    )


def test_the_author_sees_flags_once_submitted(known, client):
    checklist = _first(known)
    url = reverse("checklist-detail", args=[checklist.pk])
    client.force_login(checklist.author)
    assert 'id="criterion-health"' not in client.get(url).content.decode()  # never submitted
    assert checklist_health(checklist.author, checklist) is None
    Checklist.objects.filter(pk=checklist.pk).update(first_submitted_at=timezone.now())
    checklist.refresh_from_db()
    html = client.get(url).content.decode()
    assert 'id="criterion-health"' in html
    # The fixture's first criterion of every checklist: no system passes it.
    assert "never passed" in html and "States fact 0 of query 0." in html
    health = checklist_health(checklist.author, checklist)
    assert health.run == known.run
    assert health.graded == known.checklists[checklist.pk][1]
    assert {c.checklist_id for c, _ in health.rows} == {checklist.pk}  # own criteria only


def test_reviewers_see_it_and_other_experts_see_nothing(known, client, reviewer, collaborator):
    checklist = _first(known)
    url = reverse("checklist-detail", args=[checklist.pk])
    client.force_login(reviewer)
    assert 'id="criterion-health"' in client.get(url).content.decode()
    assert checklist_health(collaborator, checklist) is None  # not a reviewer of the dataset


def test_no_run_no_section(reviewed_dataset, client, reviewer):
    from tests.factories import QueryFactory, UserFactory

    query = QueryFactory(dataset=reviewed_dataset)
    checklist = Checklist.objects.create(
        query=query, author=UserFactory(), status=Checklist.Status.SUBMITTED
    )
    assert checklist_health(reviewer, checklist) is None
    client.force_login(reviewer)
    html = client.get(reverse("checklist-detail", args=[checklist.pk])).content.decode()
    assert 'id="criterion-health"' not in html


def test_the_editor_counts_as_the_analytics_page_does_in_few_queries(
    known, client, reviewer, django_assert_max_num_queries
):
    """The editor counts one query's items in one aggregate (selectors.health_counts); the
    admins' list counts the whole run with load_run: each criterion's health is the same."""
    from evaluation.analytics import selectors as sel
    from evaluation.analytics import summaries

    checklist = _first(known)
    whole_run = {h.criterion: h for h in summaries.criterion_health(sel.load_run(known.run))}
    health = checklist_health(reviewer, checklist)
    assert health.rows
    for criterion, row in health.rows:
        assert row == whole_run[criterion.pk]
    own = set(checklist.criteria.values_list("pk", flat=True))
    assert health.graded == len(own & whole_run.keys())
    client.force_login(reviewer)
    url = reverse("checklist-detail", args=[checklist.pk])
    with django_assert_max_num_queries(22):  # load_run's temporary table added 12
        assert 'id="criterion-health"' in client.get(url).content.decode()
