"""The review page lays an answer's criteria out by group, with each group's heading
(nested groups indented, one level deeper) and penalty criteria marked as such (issue 23)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from annotation.models import CriterionGroup
from tests.factories import PanelFactory, external_judges
from tests.support.builders import checklisted_query, finished_run

pytestmark = pytest.mark.django_db


def test_group_headings_in_reading_order_and_penalties_marked(client, reviewed_dataset, reviewer):
    made = checklisted_query(reviewed_dataset, criteria=4, answers=1)
    c = made.criteria
    checklist = c[0].checklist
    facts = CriterionGroup.objects.create(checklist=checklist, title="Facts <core>", position=0)
    detail = CriterionGroup.objects.create(
        checklist=checklist, title="Revenue detail", parent=facts, position=0
    )
    pitfalls = CriterionGroup.objects.create(checklist=checklist, title="Pitfalls", position=1)
    # c[0] in no group; c[1] in the subgroup only (both headings open before it); c[2] in
    # Facts itself, read before its subgroup; c[3] a penalty among the pitfalls.
    for criterion, group in ((c[1], detail), (c[2], facts), (c[3], pitfalls)):
        criterion.group = group
        criterion.save(update_fields=["group"])
    c[3].weight = Decimal(-2)
    c[3].save(update_fields=["weight"])
    c[0].weight = Decimal(3)  # a positive weight shows where penalties do (issue 40 point 4)
    c[0].save(update_fields=["weight"])
    panel = PanelFactory(judges=external_judges(1))
    finished_run(reviewed_dataset, panel, {(made.answers[0], x): ("pass",) for x in c})
    client.force_login(reviewer)
    page = client.get(reverse("answer-review", args=[made.answers[0].pk])).content.decode()
    at = {name: page.index(marker) for name, marker in {
        "loose": f'id="row-{c[0].pk}"', "facts": "<h3 data-group-heading>Facts &lt;core&gt;</h3>",
        "own": f'id="row-{c[2].pk}"', "detail": "<h4 data-group-heading>Revenue detail</h4>",
        "sub": f'id="row-{c[1].pk}"', "pitfalls": "<h3 data-group-heading>Pitfalls</h3>",
        "penalty": f'id="row-{c[3].pk}"',
    }.items()}  # fmt: skip
    assert sorted(at, key=at.get) == [
        "loose", "facts", "own", "detail", "sub", "pitfalls", "penalty"
    ]  # fmt: skip
    assert page.count("data-group-heading") == 3
    assert 'data-penalty title="A pitfall' in page and "Penalty -2.00" in page
    loose = page[at["loose"] : at["facts"]]
    assert "data-weight" in loose and "Weight 3.00" in loose
    assert page.count("data-weight") == 1  # weight 1 and penalties carry no weight badge
    assert "Penalty criterion by" in page
