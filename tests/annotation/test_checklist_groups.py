"""Groups (aspects) and penalty criteria in the checklist editor (issue 23): add, rename,
weight, nest, reorder and delete groups, move criteria between them by button and by the
keyboard's endpoints; refusals (another checklist's group, a cycle, a zero weight, a
non-author); penalties shown as such; flat query counts with many groups."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from annotation import services
from annotation.models import CriterionGroup
from annotation.services import groups
from tests.factories import CriterionFactory, valid_criteria

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def checklist(query, collaborator):
    return services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria()
    )


@pytest.fixture
def author(client, collaborator):
    client.force_login(collaborator)
    return client


def group(checklist, by, title, parent=None, weight=Decimal(1)):
    return groups.group_create(checklist=checklist, by=by, title=title, parent=parent,
                               weight=weight)  # fmt: skip


def reading(checklist) -> list[tuple[str | None, str]]:
    """(group title, text) of the active criteria by position."""
    return [
        (c.group.title if c.group else None, c.text)
        for c in checklist.criteria.active().select_related("group").order_by("position")
    ]


def texts(checklist) -> list[str]:
    return [text for _, text in reading(checklist)]


def test_add_nest_rename_and_weight_groups(author, checklist):
    url = reverse("group-create", args=[checklist.pk])
    response = author.post(url, {"title": "Facts", "description": "", "weight": "2"}, **HTMX)
    assert response.status_code == 200
    facts = CriterionGroup.objects.get(checklist=checklist, title="Facts")
    html = response.content.decode()
    assert f'id="group-{facts.pk}"' in html and "<details" in html
    assert 'id="new-group-parent" hx-swap-oob="true"' in html  # the choices follow
    author.post(url, {"title": "Revenue", "weight": "1", "parent": facts.pk}, **HTMX)
    revenue = CriterionGroup.objects.get(title="Revenue")
    assert revenue.parent == facts
    change = author.post(
        reverse("group-update", args=[facts.pk]),
        {"title": "Figures", "description": "The numbers <b>", "weight": "3", "parent": ""},
        **HTMX,
    )
    facts.refresh_from_db()
    assert (facts.title, facts.description, facts.weight) == ("Figures", "The numbers <b>", 3)
    assert "The numbers &lt;b&gt;" in change.content.decode()  # user text escaped


def test_without_javascript_a_group_change_redirects_back(author, checklist):
    response = author.post(
        reverse("group-create", args=[checklist.pk]), {"title": "Facts", "weight": "1"}
    )
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("checklist-detail", args=[checklist.pk]))


def test_a_cycle_a_zero_weight_and_another_checklists_group_are_refused(
    author, checklist, collaborator, query
):
    top = group(checklist, collaborator, "Top")
    child = group(checklist, collaborator, "Child", parent=top)
    cycle = author.post(
        reverse("group-update", args=[top.pk]),
        {"title": "Top", "weight": "1", "parent": child.pk},
        **HTMX,
    )
    assert "cannot be nested inside itself" in cycle.content.decode()
    top.refresh_from_db()
    assert top.parent is None
    zero = author.post(
        reverse("group-create", args=[checklist.pk]), {"title": "Zero", "weight": "0"}, **HTMX
    )
    assert "data-group-error" in zero.content.decode()
    assert not CriterionGroup.objects.filter(title="Zero").exists()
    from tests.factories import ChecklistFactory

    other = ChecklistFactory(query=query)
    foreign = CriterionGroup.objects.create(checklist=other, title="Theirs")
    criterion = checklist.criteria.get(position=2)
    author.post(reverse("criterion-group", args=[criterion.pk]), {"group": foreign.pk}, **HTMX)
    author.post(
        reverse("group-create", args=[checklist.pk]),
        {"title": "Stray", "weight": "1", "parent": foreign.pk},
        **HTMX,
    )
    criterion.refresh_from_db()
    assert criterion.group is None
    assert not CriterionGroup.objects.filter(title="Stray").exists()


def test_the_services_refuse_a_cycle_a_zero_weight_and_a_foreign_group(
    checklist, collaborator, query
):
    top = group(checklist, collaborator, "Top")
    child = group(checklist, collaborator, "Child", parent=top)
    with pytest.raises(groups.GroupRefused):
        groups.group_update(group=top, by=collaborator, parent=child)
    with pytest.raises(groups.GroupRefused):
        groups.group_update(group=top, by=collaborator, weight=Decimal(0))
    from tests.factories import ChecklistFactory

    foreign = CriterionGroup.objects.create(checklist=ChecklistFactory(query=query), title="X")
    with pytest.raises(groups.GroupRefused):
        groups.criterion_to_group(
            criterion=checklist.criteria.first(), by=collaborator, group=foreign
        )


def test_only_the_author_changes_groups(client, checklist, collaborator, owner, outsider):
    top = group(checklist, collaborator, "Top")
    criterion = checklist.criteria.get(position=1)
    writes = [
        (reverse("group-create", args=[checklist.pk]), {"title": "X", "weight": "1"}),
        (reverse("group-update", args=[top.pk]), {"title": "X", "weight": "1"}),
        (reverse("group-move", args=[top.pk]), {"direction": "up"}),
        (reverse("group-delete", args=[top.pk]), {}),
        (reverse("criterion-group", args=[criterion.pk]), {"group": top.pk}),
    ]
    for user, expected in ((owner, 403), (outsider, 404)):
        client.force_login(user)
        for url, data in writes:
            assert client.post(url, data, **HTMX).status_code == expected, (user, url)
    client.logout()
    assert client.post(writes[0][0], writes[0][1]).status_code == 302  # to the login page
    top.refresh_from_db()
    assert top.title == "Top"
    assert CriterionGroup.objects.filter(checklist=checklist).count() == 1


def test_csrf_is_checked(checklist, collaborator):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(collaborator)
    url = reverse("group-create", args=[checklist.pk])
    assert strict.post(url, {"title": "X", "weight": "1"}).status_code == 403


def test_criteria_move_between_groups_by_menu_and_by_keyboard_moves(
    author, checklist, collaborator
):
    facts = group(checklist, collaborator, "Facts")
    group(checklist, collaborator, "Form")
    _first, second, third = checklist.criteria.order_by("position")[:3]
    author.post(reverse("criterion-group", args=[second.pk]), {"group": facts.pk}, **HTMX)
    author.post(reverse("criterion-group", args=[third.pk]), {"group": facts.pk}, **HTMX)
    order = reading(checklist)
    assert order[-2:] == [("Facts", second.text), ("Facts", third.text)]
    assert [c.position for c in checklist.criteria.active().order_by("position")] == list(
        range(1, 7)
    )
    move = reverse("criterion-move", args=[third.pk])
    author.post(move, {"direction": "up"}, **HTMX)  # within its group
    assert reading(checklist)[-2:] == [("Facts", third.text), ("Facts", second.text)]
    author.post(move, {"direction": "up"}, **HTMX)  # at the group's top: out, to the end above
    assert reading(checklist)[-2:] == [(None, third.text), ("Facts", second.text)]
    author.post(move, {"direction": "group-down"}, **HTMX)  # straight into the next group
    author.post(move, {"direction": "group-down"}, **HTMX)
    assert reading(checklist)[-1] == ("Form", third.text)
    author.post(move, {"direction": "group-down"}, **HTMX)  # the last group: no-op
    assert reading(checklist)[-1] == ("Form", third.text)
    author.post(reverse("criterion-group", args=[third.pk]), {"group": ""}, **HTMX)
    third.refresh_from_db()
    assert third.group is None


def test_groups_reorder_and_nest_and_the_numbers_follow(author, checklist, collaborator):
    a = group(checklist, collaborator, "A")
    b = group(checklist, collaborator, "B")
    one, two = checklist.criteria.order_by("position")[:2]
    groups.criterion_to_group(criterion=one, by=collaborator, group=a)
    groups.criterion_to_group(criterion=two, by=collaborator, group=b)
    author.post(reverse("group-move", args=[b.pk]), {"direction": "up"}, **HTMX)
    assert reading(checklist)[-2:] == [("B", two.text), ("A", one.text)]
    author.post(
        reverse("group-update", args=[a.pk]), {"title": "A", "weight": "1", "parent": b.pk}, **HTMX
    )
    a.refresh_from_db()
    assert a.parent == b
    page = author.get(reverse("checklist-detail", args=[checklist.pk])).content.decode()
    # A is inside B's section: B's <details> opens before A's and closes after it.
    assert page.index(f'id="group-{b.pk}"') < page.index(f'id="group-{a.pk}"')
    author.post(reverse("group-delete", args=[b.pk]), **HTMX)
    assert not CriterionGroup.objects.filter(checklist=checklist).exists()
    assert len(texts(checklist)) == 6  # the criteria stay, in no group


def test_a_new_criterion_can_go_straight_into_a_group(author, checklist, collaborator):
    facts = group(checklist, collaborator, "Facts")
    response = author.post(
        reverse("criterion-create", args=[checklist.pk]),
        {"text": "States the Q3 operating margin of 30%.", "kind": "fact", "group": facts.pk},
        **HTMX,
    )
    assert response["HX-Retarget"] == "#criteria"
    assert reading(checklist)[-1] == ("Facts", "States the Q3 operating margin of 30%.")


def test_a_penalty_is_shown_as_such(author, checklist):
    criterion = checklist.criteria.get(position=5)
    url = reverse("criterion-update", args=[criterion.pk])
    data = {"text": criterion.text, "kind": "fact", "weight": "-2", "is_core": "on"}
    autosave = author.post(url, data, **HTMX).content.decode()
    criterion.refresh_from_db()
    assert criterion.weight == Decimal(-2) and criterion.is_penalty
    assert "data-penalty-line" in autosave and "Penalty" in autosave
    page = author.get(reverse("checklist-detail", args=[checklist.pk])).content.decode()
    assert "data-penalty" in page and "Penalty -2.00" in page


def test_editor_query_count_stays_flat_with_many_groups(
    author, checklist, collaborator, django_assert_max_num_queries
):
    def count() -> int:
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as ctx:
            assert author.get(reverse("checklist-detail", args=[checklist.pk])).status_code == 200
        return len(ctx.captured_queries)

    top = group(checklist, collaborator, "Top")
    few = count()
    parent = top
    for n in range(30):
        parent = group(checklist, collaborator, f"Level {n}", parent=parent if n % 3 else top)
        CriterionFactory(checklist=checklist, group=parent, position=100 + n)
    assert count() == few
    with django_assert_max_num_queries(14):
        author.get(reverse("checklist-detail", args=[checklist.pk]))


def test_a_penalty_worded_as_an_avoidance_is_flagged_live(author, checklist):
    criterion = checklist.criteria.get(position=3)
    url = reverse("criterion-update", args=[criterion.pk])
    data = {"text": "Does not report the unaudited Q3 margin of 61.5%.", "kind": "fact",
            "weight": "-1", "is_core": "on"}  # fmt: skip
    html = author.post(url, data, **HTMX).content.decode()
    assert 'data-rule="penalty-wording"' in html
    fixed = author.post(url, {**data, "text": "Reports the unaudited Q3 margin of 61.5%."}, **HTMX)
    assert 'data-rule="penalty-wording"' not in fixed.content.decode()


def test_a_guideline_may_require_every_criterion_in_a_group(author, checklist, collaborator):
    from annotation.services.guidelines import guideline_create

    dataset = checklist.query.dataset
    dataset.guideline = guideline_create(
        name="Grouped",
        preset="finance",
        config={"rules": {"criterion-in-group": {"enabled": True}}},
    )
    dataset.save(update_fields=["guideline"])
    page = author.get(reverse("checklist-detail", args=[checklist.pk])).content.decode()
    assert page.count('data-rule="criterion-in-group"') == 6
    everything = group(checklist, collaborator, "All")
    for criterion in checklist.criteria.all():
        groups.criterion_to_group(criterion=criterion, by=collaborator, group=everything)
    page = author.get(reverse("checklist-detail", args=[checklist.pk])).content.decode()
    assert 'data-rule="criterion-in-group"' not in page


def test_the_query_page_shows_each_groups_heading_before_its_criteria(
    author, checklist, collaborator, django_assert_max_num_queries
):
    facts = group(checklist, collaborator, "Facts")
    revenue = group(checklist, collaborator, "Revenue", parent=facts)  # only subgroups above
    group(checklist, collaborator, "Empty")  # no criteria: no heading
    one, two, three = checklist.criteria.order_by("position")[:3]
    groups.criterion_to_group(criterion=one, by=collaborator, group=revenue)
    groups.criterion_to_group(criterion=two, by=collaborator, group=facts)
    groups.criterion_to_group(criterion=three, by=collaborator, group=revenue)
    url = reverse("query-detail", args=[checklist.query_id])
    with django_assert_max_num_queries(18):  # one query for the groups, however many
        page = author.get(url).content.decode()
    # The checklist reads: three loose criteria, Facts' own (two), then Revenue's (one, three).
    at = {text: page.index(text) for text in ("Facts</h4>", "Revenue</h5>")}
    for criterion in (two,):
        assert at["Facts</h4>"] < page.index(criterion.text) < at["Revenue</h5>"]
    for criterion in (one, three):
        assert at["Revenue</h5>"] < page.index(criterion.text)
    loose = [c for c in checklist.criteria.active() if c.group_id is None]
    assert all(page.index(c.text) < at["Facts</h4>"] for c in loose)
    assert "Empty</h" not in page
    assert page.count("data-group-heading") == 2
    # Numbers follow the reading order, as in the editor: the headings are not counted.
    assert page.count('<li value="') == 6 and '<li value="6">' in page
