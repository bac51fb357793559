"""A trial beside its baseline on the same labelled items: agreement, κ, confusion matrices,
per kind, McNemar, cost and latency per item, the changed items; the page, the API, their
permissions and the page's query count."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from annotation import roles
from annotation import services as annotation
from evaluation.trials.selectors import comparison

pytestmark = pytest.mark.django_db


def test_both_sides_are_measured_on_the_same_items(compared):
    c = comparison(compared.trial)
    assert c.baseline == compared.baseline
    # Six labelled items graded by both, one shown as an example (left out and counted),
    # one with tied labels (no reference): five compared.
    assert (c.items, c.excluded, c.undecided, c.only_one) == (5, 1, 1, 0)
    base, trial = c.baseline_side.agreement, c.trial_side.agreement
    assert (base.n, base.agree, trial.n, trial.agree) == (5, 3, 5, 4)
    # rows: the panel's pass, fail; columns: the human pass, fail
    assert trial.confusion.counts == ((3, 1), (0, 1))
    assert base.confusion.counts == ((2, 1), (1, 1))
    assert trial.kappa.kappa is not None and trial.kappa.low <= trial.kappa.kappa
    # b: the baseline right and the trial wrong; c: the other way round. 3 discordant
    # items: the exact test, p = 2 · (C(3,0) + C(3,1)) / 2³ = 1.
    assert (c.test.b, c.test.c, c.test.method, c.test.p_value) == (1, 2, "exact", 1.0)
    assert [(i.answer_id, i.criterion_id) for i in c.changed] == sorted(
        [
            (compared.answers[0].pk, compared.criteria[1].pk),
            (compared.answers[1].pk, compared.criteria[0].pk),
            (compared.answers[1].pk, compared.criteria[1].pk),
        ]
    )
    assert c.changed_count == 3
    assert {i.criterion for i in c.changed} >= {"Presents the figures in a table."}


def test_per_kind_cost_and_latency_per_item(compared):
    c = comparison(compared.trial)
    kinds = {row.kind: (row.baseline.n, row.trial.agree) for row in c.kinds}
    assert kinds == {"fact": (3, 3), "format": (2, 1)}
    # The candidate: 100 prompt and 20 completion tokens per vote at 1 and 2 per million,
    # 300 ms, one vote per item; the current judge is external: no cost, no time.
    assert c.trial_side.cost_per_item == Decimal("0.000140")
    assert c.trial_side.latency_per_item_ms == 300
    assert c.trial_side.calls == 5
    assert c.baseline_side.calls == 0  # imported verdicts: no request was made here
    assert c.baseline_side.cost_per_item == Decimal("0.000000")
    assert c.baseline_side.latency_per_item_ms == 0


def test_a_run_without_baseline_compares_nothing(compared):
    c = comparison(compared.baseline)
    assert c.baseline is None and c.items == 0 and c.test is None


def test_the_api_gives_the_comparison(compared, owner_api, outsider_api):
    url = f"/api/runs/{compared.trial.pk}/comparison/"
    data = owner_api.get(url).json()
    assert data["baseline"] == compared.baseline.pk and data["items"] == 5
    assert data["excluded_examples"] == 1
    assert data["mcnemar"]["p_value"] == 1.0 and data["mcnemar"]["method"] == "exact"
    assert data["trial_side"]["agreement"]["agree"] == 4
    assert data["trial_side"]["agreement"]["confusion"]["counts"] == [[3, 1], [0, 1]]
    assert data["trial_side"]["cost_per_item"] == "0.000140"
    assert data["changed_count"] == 3 and len(data["changed"]) == 3
    assert outsider_api.get(url).status_code == 404


def test_the_page_shows_both_columns_in_a_bounded_number_of_queries(
    compared, client, owner, django_assert_max_num_queries
):
    client.force_login(owner)
    url = reverse("run-comparison", args=[compared.trial.pk])
    client.get(url)  # warm what is kept (sessions, permission caches)
    with django_assert_max_num_queries(15):  # whatever the number of items
        page = client.get(url).content.decode()
    assert "Current judge" in page and "Candidate:" in page
    assert "data-p-value>1.0000<" in page
    assert "1 item shown to the judges as worked examples" in page
    assert page.count("data-item=") == 3
    answer, criterion = compared.answers[0].pk, compared.criteria[1].pk
    assert f"/answers/{answer}/review/?run={compared.trial.pk}&amp;criterion={criterion}" in page
    assert "Use this judge" in page


def test_use_this_judge_puts_the_candidate_in_the_baseline_panel(compared, client, owner):
    client.force_login(owner)
    panel = compared.baseline.panel
    response = client.post(reverse("run-use-judge", args=[compared.trial.pk]))
    assert response.status_code == 302 and response.url == reverse("panel-edit", args=[panel.pk])
    assert [m.judge for m in panel.members.all()] == [compared.candidate]
    # The baseline keeps what it ran with.
    compared.baseline.refresh_from_db()
    assert [m["name"] for m in compared.baseline.snapshot["members"]] == ["Current"]


def test_only_those_who_manage_panels_use_a_judge(compared, client, reviewer, owner):
    annotation.dataset_set_role(
        dataset=compared.trial.dataset, user=reviewer, role=roles.DatasetRole.REVIEWER
    )
    client.force_login(reviewer)
    url = reverse("run-comparison", args=[compared.trial.pk])
    page = client.get(url)
    assert page.status_code == 200 and "Use this judge" not in page.content.decode()
    assert client.post(reverse("run-use-judge", args=[compared.trial.pk])).status_code == 403
    assert [m.judge.name for m in compared.baseline.panel.members.all()] == ["Current"]


def test_the_api_adopts_only_a_finished_trial(compared, owner_api):
    refused = owner_api.post(f"/api/runs/{compared.baseline.pk}/use-judge/")
    assert refused.status_code == 409 and "trial" in refused.json()["detail"]
    adopted = owner_api.post(f"/api/runs/{compared.trial.pk}/use-judge/")
    assert adopted.status_code == 200
    assert [m.judge for m in compared.baseline.panel.members.all()] == [compared.candidate]
