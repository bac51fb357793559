"""The agreement page names a panel and its judge apart and says "n/a" with the reason when
kappa cannot say anything (a judge that always answers the same), without changing any
figure (issue 15)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluation.agreement.selectors import agreement_report
from evaluation.judges.models import Judge
from evaluation.labels.models import HumanLabel
from tests.factories import PanelFactory
from tests.support.builders import checklisted_query, finished_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def always_pass(reviewed_dataset):
    judge = Judge.objects.create(name="Offline checks", kind=Judge.Kind.EXTERNAL)
    panel = PanelFactory(name="Offline checks", judges=[judge])
    made = checklisted_query(reviewed_dataset, criteria=4, answers=1)
    crits, (answer,) = made.criteria, made.answers
    finished_run(reviewed_dataset, panel, {(answer, c): ("pass",) for c in crits})
    for criterion, label in zip(crits, ("pass", "fail", "pass", "fail"), strict=True):
        HumanLabel.objects.create(answer=answer, criterion=criterion, rater="reviewer", label=label)
    return crits


def test_panel_and_judge_names_differ_and_kappa_says_why_it_is_na(
    always_pass, reviewed_dataset, client, reviewer
):
    client.force_login(reviewer)
    html = client.get(reverse("dataset-agreement", args=[reviewed_dataset.pk])).content.decode()
    assert "Offline checks (panel)" in html and "Offline checks (judge)" in html
    assert "the panel always said pass, so κ cannot tell agreement from chance" in html
    assert "the judge always said pass, so κ cannot tell agreement from chance" in html
    assert "0.000 – 0.000" not in html
    # The figures themselves are unchanged: kappa is 0 with a 0–0 interval, as computed.
    report = agreement_report(reviewed_dataset)
    assert report.overall.agreement.kappa.kappa == 0.0
    assert report.overall.agreement.percent == 0.5
    assert "0.500" in html  # percent agreement still shown


def test_charts_stand_beside_their_tables(always_pass, reviewed_dataset, client, reviewer):
    client.force_login(reviewer)
    html = client.get(reverse("dataset-agreement", args=[reviewed_dataset.pk])).content.decode()
    judge_table = html.index('aria-label="Agreement per judge"')
    pair = html.rindex('class="figure-pair"', 0, judge_table)
    chart = html.index("<svg", judge_table)
    next_heading = html.index("<h3>", judge_table)
    assert pair < judge_table < chart < next_heading
