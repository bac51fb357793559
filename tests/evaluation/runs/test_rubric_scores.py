"""A run's strategy values and group scores, counted in SQL per (answer, checklist, group),
equal the recursive oracle's (tests/support/rubric_oracle.py through scores_oracle) for every
strategy, on random group trees with penalties, zero weights, disabled criteria, undecided
verdicts and adjudications; a checklist's own strategy overrides its dataset's."""

from __future__ import annotations

import random
from dataclasses import asdict

import pytest

from annotation.models import Checklist, Criterion, CriterionGroup
from evaluation.metrics.rubrics import STRATEGIES
from evaluation.runs import scores
from tests.evaluation.agreement.labelled import build_labelled
from tests.evaluation.runs import scores_oracle
from tests.support.compare import same


def grow_groups(checklist_ids, *, seed: int) -> None:
    """Random trees (up to 4 deep) over each checklist's criteria; some stay ungrouped."""
    rng = random.Random(seed)
    for checklist_id in checklist_ids:
        groups: list[CriterionGroup] = []
        for n in range(rng.randint(0, 5)):
            parent = rng.choice([None, *groups[-3:]]) if groups else None
            groups.append(
                CriterionGroup.objects.create(
                    checklist_id=checklist_id, parent=parent, title=f"Aspect {n}",
                    weight=rng.choice([1, 2, 0.5, 3]), position=rng.randint(0, 3),
                    external_id=f"g{n}" if n % 2 else "",
                )
            )  # fmt: skip
        criteria = list(Criterion.objects.filter(checklist_id=checklist_id))
        for criterion in criteria:
            criterion.group = rng.choice([None, *groups]) if groups else None
            criterion.weight = rng.choice([1, 2, 0.5, 0, -1, -3])
            criterion.scoring_enabled = rng.random() > 0.1
        Criterion.objects.bulk_update(criteria, ["group", "weight", "scoring_enabled"])


@pytest.fixture
def grouped(reviewed_dataset):
    data = build_labelled(reviewed_dataset, queries=5, criteria=8, systems=3, seed=7)
    checklists = sorted(
        set(Criterion.objects.filter(pk__in=data.kinds).values_list("checklist_id", flat=True))
    )
    grow_groups(checklists, seed=11)
    reviewed_dataset.pass_threshold = 0.5
    reviewed_dataset.save()
    return data, checklists


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_strategy_in_sql_equals_the_oracle(grouped, reviewed_dataset, strategy):
    data, _ = grouped
    reviewed_dataset.scoring = strategy
    reviewed_dataset.blend_weight = 0.6
    reviewed_dataset.save()
    run = data.run
    run.refresh_from_db()
    expected = scores_oracle.run_report(run)
    assert any(c.groups for a in expected.answers for c in a.checklists)
    same(asdict(expected), asdict(scores.run_report(run)))


def test_a_checklists_own_strategy_overrides_the_datasets(grouped, reviewed_dataset):
    data, checklists = grouped
    Checklist.objects.filter(pk=checklists[0]).update(scoring="points")
    run = data.run
    run.refresh_from_db()
    report = scores.run_report(run)
    strategies = {c.checklist_id: c.scoring for a in report.answers for c in a.checklists}
    assert strategies[checklists[0]] == "points"
    assert strategies[checklists[1]] == "share"
    same(asdict(scores_oracle.run_report(run)), asdict(report))


def test_the_kept_scores_follow_a_groups_weight_and_a_checklists_strategy(
    grouped, reviewed_dataset
):
    data, checklists = grouped
    reviewed_dataset.scoring = "tree"
    reviewed_dataset.save()
    run = data.run
    run.refresh_from_db()
    before = scores.run_scores(run)[0:1000]
    group = CriterionGroup.objects.filter(children__isnull=False).first() or (
        CriterionGroup.objects.first()
    )
    group.weight = 9
    group.save()
    checklist = Checklist.objects.get(pk=checklists[1])
    checklist.scoring = "aspect"
    checklist.save()
    fresh = scores.run_scores(run)
    if fresh.updating:
        scores.refresh_scores(run)
        fresh = scores.run_scores(run)
    after = fresh[0:1000]
    assert before != after
    same([asdict(a) for a in scores_oracle.run_report(run).answers], [asdict(a) for a in after])


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_strategy_counts_undecided_criteria_as_not_met_when_the_dataset_says(
    grouped, reviewed_dataset, strategy
):
    data, _ = grouped
    run = data.run
    reviewed_dataset.scoring = strategy
    reviewed_dataset.save()
    run.refresh_from_db()
    excluded = scores.run_report(run)
    reviewed_dataset.undecided = "not_met"
    reviewed_dataset.save()
    run.refresh_from_db()
    expected = scores_oracle.run_report(run)
    assert any(a.undecided for a in expected.answers)
    report = scores.run_report(run)
    same(asdict(expected), asdict(report))
    assert {c.undecided_as for a in report.answers for c in a.checklists} == {"not_met"}
    # The setting moves the figures of answers with an undecided criterion, only those
    # (points may move none: an undecided penalty moves nothing, a clipped 0 stays 0).
    before = {a.answer_id: a.value for a in excluded.answers}
    moved = {a.answer_id for a in report.answers if a.value != before[a.answer_id]}
    assert moved <= {a.answer_id for a in report.answers if a.undecided}
    assert moved or strategy == "points"


def test_a_checklists_own_undecided_setting_overrides_the_datasets(grouped, reviewed_dataset):
    data, checklists = grouped
    Checklist.objects.filter(pk=checklists[0]).update(undecided="not_met", scoring="tree")
    run = data.run
    run.refresh_from_db()
    report = scores.run_report(run)
    settings = {c.checklist_id: c.undecided_as for a in report.answers for c in a.checklists}
    assert settings[checklists[0]] == "not_met"
    assert settings[checklists[1]] == "excluded"
    same(asdict(scores_oracle.run_report(run)), asdict(report))
