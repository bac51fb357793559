"""Migration 0025 moves each judge's tuning to the dataset that owns its content (issue 38):
examples from one dataset go to it; instructions without sourced examples are copied to the
datasets whose runs used them; a tuning whose examples come from several datasets, or that
no dataset used, is dropped and the migration says so. Migrated back to 0024 on a real
database, given the old shape's rows, and forward again."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from annotation.models import Dataset
from evaluation.judges.models import JudgeTuning, JudgeVersion
from evaluation.labels.models import Adjudication
from evaluation.runs.models import Run
from tests.factories import PanelFactory, offline_judge
from tests.support.builders import checklisted_query

BEFORE = [("evaluation", "0024_judge_tuning_trials_and_batches"), ("audit", "0004_judge_tuning")]


def _migrate(targets) -> object:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def _example(adjudication: Adjudication) -> dict:
    return {
        "criterion": adjudication.criterion.text, "excerpt": "x", "decision": "pass",
        "reason": "r", "source": {"adjudication": adjudication.pk,
                                  "answer": adjudication.answer_id,
                                  "criterion": adjudication.criterion_id},
    }  # fmt: skip


@pytest.mark.django_db(transaction=True)
def test_each_tuning_moves_to_its_dataset_or_is_dropped_and_said(capsys):
    a, b = Dataset.objects.create(name="A"), Dataset.objects.create(name="B")
    adjudications = {}
    for dataset in (a, b):
        made = checklisted_query(dataset, criteria=1, answers=1)
        adjudications[dataset.name] = Adjudication.objects.create(
            answer=made.answers[0], criterion=made.criteria[0], label="pass", reason="r"
        )
    judges = [offline_judge(f"J{n}") for n in range(4)]
    # A run on B whose panel has J2 at its tuned version "v-two".
    Run.objects.create(
        dataset=b, panel=PanelFactory(judges=[judges[2]]), status=Run.Status.DONE,
        snapshot={"members": [{"judge": judges[2].pk, "name": "J2", "kind": "llm", "samples": 1,
                               "temperatures": [0.0], "prompt_version": "verdict-v1+tuned-two"}]},
    )  # fmt: skip
    try:
        apps = _migrate(BEFORE)
        Judge = apps.get_model("evaluation", "Judge")
        Version = apps.get_model("evaluation", "JudgeVersion")
        one, both = [_example(adjudications["A"])], [
            _example(adjudications["A"]), _example(adjudications["B"]),
        ]  # fmt: skip
        Judge.objects.filter(pk=judges[0].pk).update(instructions="only A", examples=one)
        Judge.objects.filter(pk=judges[1].pk).update(instructions="mixed", examples=both)
        Judge.objects.filter(pk=judges[2].pk).update(instructions="typed, used by B")
        Judge.objects.filter(pk=judges[3].pk).update(instructions="never used")
        Version.objects.create(judge_id=judges[0].pk, version="verdict-v1+tuned-one",
                               instructions="only A", examples=one)  # fmt: skip
        Version.objects.create(judge_id=judges[1].pk, version="verdict-v1+tuned-mix",
                               instructions="mixed", examples=both)  # fmt: skip
        Version.objects.create(judge_id=judges[2].pk, version="verdict-v1+tuned-two",
                               instructions="typed, used by B")  # fmt: skip
        capsys.readouterr()
    finally:
        executor = MigrationExecutor(connection)
        _migrate(executor.loader.graph.leaf_nodes())
    report = capsys.readouterr().out

    tunings = {(t.judge.name, t.dataset.name): t.instructions for t in JudgeTuning.objects.all()}
    assert tunings == {("J0", "A"): "only A", ("J2", "B"): "typed, used by B"}
    versions = {(v.judge.name, v.dataset.name, v.version) for v in JudgeVersion.objects.all()}
    assert versions == {("J0", "A", "verdict-v1+tuned-one"), ("J2", "B", "verdict-v1+tuned-two")}
    assert f"its examples come from datasets {a.pk}, {b.pk}" in report  # J1, both times
    assert "'J3', current tuning: dropped: no dataset's run used it" in report
    assert "moved to the dataset its examples come from (dataset" in report
