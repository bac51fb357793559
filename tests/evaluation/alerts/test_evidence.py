"""A regression alert's evidence (evaluation/alerts/evidence.py): the criteria that moved
beyond the judge's own noise between two runs, item by item on the criteria unchanged
between them, and the queries where they moved; a drop the judge's measured noise explains
is recorded as such and not sent (issue 43, point 4)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core import mail
from django.urls import reverse

from evaluation.alerts import services as alerts
from evaluation.alerts.evidence import item_moves
from evaluation.alerts.models import AlertEvent, RegressionAlert
from evaluation.answers.models import System
from evaluation.metrics.mcnemar import mcnemar
from evaluation.runs.models import Verdict
from evaluation.schedules import services as schedules
from tests.evaluation.alerts.test_regression_alerts import two_runs
from tests.evaluation.analytics.known import panel
from tests.factories import PanelFactory, offline_judge


def items(outcomes: list[str], criterion: int | None = None) -> dict:
    """One item per query, each on its own criterion (a checklist per query) unless given."""
    return {(q, 0, criterion or 100 + q): o for q, o in enumerate(outcomes)}


def test_a_drop_is_beyond_noise_when_the_paired_test_and_the_floor_both_say_so():
    before = items(["pass"] * 20)
    after = items(["fail"] * 10 + ["pass"] * 10)  # 10 worse, 0 better: net drop 0.5
    moves = item_moves(before, after, {}, None)
    assert (moves.items, len(moves.worse), moves.better) == (20, 10, 0)
    assert moves.p_value == mcnemar(10, 0).p_value < 0.05
    assert moves.floor is None and moves.beyond_noise  # unmeasured: the paired test decides
    assert item_moves(before, after, {}, 0.2).beyond_noise  # 0.5 > 0.2
    # A judge that flips 60% of its items explains a 0.5 drop.
    assert not item_moves(before, after, {}, 0.6).beyond_noise
    # The criteria's own rates first, the overall one for the others: the mean over items.
    own = {100 + q: 0.95 for q in range(10)}
    moves = item_moves(before, after, own, 0.1)
    assert moves.floor == pytest.approx((10 * 0.95 + 10 * 0.1) / 20)  # 0.525
    assert not moves.beyond_noise


def test_few_changes_or_changes_both_ways_are_not_beyond_noise():
    few = item_moves(items(["pass"] * 20), items(["fail"] * 3 + ["pass"] * 17), {}, None)
    assert not few.beyond_noise and few.p_value > 0.05
    both_ways = items(["pass"] * 10 + ["fail"] * 10), items(["fail"] * 10 + ["pass"] * 10)
    assert not item_moves(*both_ways, {}, None).beyond_noise


def test_undecided_items_and_criteria_in_one_run_only_are_left_out():
    before = {**items(["pass"] * 8, criterion=1), **items(["pass"] * 8, criterion=2)}
    after = {**items(["fail"] * 8, criterion=1), **items(["fail"] * 8, criterion=3)}
    before[(0, 1, 1)], after[(0, 1, 1)] = "undecided", "fail"
    moves = item_moves(before, after, {}, None)
    assert moves.items == 8 and {c for _, _, c in moves.worse} == {1}


def email_alert(dataset, owner, system_id: int | None, *, threshold: float) -> RegressionAlert:
    return RegressionAlert.objects.create(
        dataset=dataset, system_id=system_id, threshold=threshold, emails="qa@example.com",
        created_by=owner,
    )  # fmt: skip


def test_the_alert_names_the_criteria_and_queries_that_moved(reviewed_dataset, owner):
    before, after = two_runs(reviewed_dataset)
    alpha = next(pk for pk, name in before.systems.items() if name == "Alpha")
    email_alert(reviewed_dataset, owner, alpha, threshold=0.1)
    (event,) = alerts.check_run(after.run)
    evidence = event.payload["evidence"]
    assert event.payload["event"] == "regression" and event.email_state == "pending"
    assert evidence["noise_measured"] is False and evidence["criteria_left_out"] == 0

    # The oracle, from the raw data: Alpha's final outcomes (adjudication, else the panel).
    def finals(known):
        return {
            (known.answers[a][0], c): known.adjudications.get((a, c)) or panel(votes)
            for (a, c), votes in known.votes.items()
            if known.answers[a][1] == alpha
        }

    was, now = finals(before), finals(after)
    decided = [i for i in was if was[i] in ("pass", "fail") and now[i] in ("pass", "fail")]
    worse = sorted(i for i in decided if was[i] == "pass" and now[i] == "fail")
    better = sum(1 for i in decided if was[i] == "fail" and now[i] == "pass")
    assert (evidence["items"], evidence["worse"], evidence["better"]) == (
        len(decided),
        len(worse),
        better,
    )
    assert evidence["beyond_noise"] and evidence["p_value"] < 0.05
    assert [(r["query_id"], r["criterion_id"]) for r in evidence["criteria"]] == worse[:20]
    assert all(row["text"] and row["url"].endswith(f"/queries/{row['query_id']}/")
               for row in evidence["criteria"])  # fmt: skip
    assert sum(q["worse"] for q in evidence["queries"]) == len(worse)


def test_a_drop_the_judges_own_noise_explains_is_kept_and_not_sent(reviewed_dataset, owner):
    before, after = two_runs(reviewed_dataset)
    alpha = next(pk for pk, name in before.systems.items() if name == "Alpha")
    # Each run's first judge graded every item twice, and disagreed with itself each time:
    # its flip rate is 1, so no drop is beyond what it explains.
    for known in (before, after):
        judge = known.run.verdicts.order_by("judge_id").values_list("judge_id", flat=True)[0]
        Verdict.objects.bulk_create(
            Verdict(run=v.run, answer_id=v.answer_id, criterion_id=v.criterion_id, judge_id=judge,
                    sample=1, outcome="fail" if v.outcome == "pass" else "pass", cache_key="")
            for v in known.run.verdicts.filter(judge_id=judge, sample=0)
        )  # fmt: skip
    email_alert(reviewed_dataset, owner, alpha, threshold=0.01)
    (event,) = alerts.check_run(after.run)
    evidence = event.payload["evidence"]
    assert evidence["noise_measured"] and not evidence["beyond_noise"]
    assert evidence["items"] > 0 and evidence["noise_floor"] == 1.0
    assert event.payload["event"] == alerts.WITHIN_NOISE
    assert (event.email_state, event.webhook_state) == ("", "")
    assert mail.outbox == []
    assert AlertEvent.objects.count() == 1


@pytest.fixture(autouse=True)
def _eager(eager_refresh):
    return eager_refresh


def test_the_alerts_and_schedules_pages_show_the_evidence(
    reviewed_dataset, owner, owner_client, django_assert_max_num_queries
):
    before, after = two_runs(reviewed_dataset)
    alpha = next(pk for pk, name in before.systems.items() if name == "Alpha")
    RegressionAlert.objects.create(dataset=reviewed_dataset, system_id=alpha, threshold=0.1)
    (event,) = alerts.check_run(after.run)
    evidence = event.payload["evidence"]
    first = evidence["criteria"][0]
    with django_assert_max_num_queries(12):
        page = owner_client.get(reverse("dataset-alerts", args=[reviewed_dataset.pk]))
    text = page.content.decode()
    assert "Beyond the judge's noise" in text and 'data-beyond-noise="true"' in text
    assert f"{evidence['worse']} items went from pass to fail" in text
    assert f"The first 20 of {evidence['worse']}." in text
    assert reverse("query-detail", args=[first["query_id"]]) in text

    # The run a schedule started (a schedule's runs carry its name) shows it there too.
    schedules.schedule_save(
        dataset=reviewed_dataset, name=after.run.name, system=System.objects.get(pk=alpha),
        panel=PanelFactory(judges=[offline_judge("Night")]), at=dt.time(2, 30), days="*",
        enabled=True, by=owner,
    )  # fmt: skip
    with django_assert_max_num_queries(20):
        page = owner_client.get(reverse("dataset-schedules", args=[reviewed_dataset.pk]))
    text = page.content.decode()
    assert 'id="scheduled-alert-events"' in text and "Beyond the judge's noise" in text


def test_without_a_measure_of_the_noise_a_drop_chance_may_explain_is_still_sent(
    reviewed_dataset, owner
):
    """Four items, every one from pass to fail: McNemar's p = 0.125, not told from chance;
    no repeated sample measured the judge's noise, so the alert goes out as before, its
    evidence saying so (a small dataset rarely reaches p < 0.05)."""
    from tests.evaluation.analytics.known import build_known

    small = {"sizes": (2, 2), "systems": ("Alpha",), "hard_first": False, "label_share": 0.0}
    before = build_known(reviewed_dataset, seed=1, skill={"Alpha": 1.0}, **small)
    after = build_known(reviewed_dataset, seed=2, skill={"Alpha": 0.0}, queries=before.plan,
                        **small)  # fmt: skip
    email_alert(reviewed_dataset, owner, None, threshold=0.1)
    (event,) = alerts.check_run(after.run)
    evidence = event.payload["evidence"]
    assert not evidence["noise_measured"] and not evidence["beyond_noise"]
    assert evidence["worse"] >= 1 and evidence["p_value"] > 0.05
    assert event.payload["event"] == "regression" and event.email_state == "pending"
