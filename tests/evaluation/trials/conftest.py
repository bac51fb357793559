"""Trials (issue 25): a dataset whose items carry human labels and adjudications, a baseline
run of the current judge and a trial of a candidate, with the votes a test spells out."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from annotation.models import Criterion
from evaluation.answers.models import Answer
from evaluation.judges.models import Judge
from evaluation.labels.models import Adjudication
from evaluation.runs.models import Run, Verdict
from tests.factories import PanelFactory
from tests.support.builders import checklisted_query, finished_run, human_label, written


def adjudicate(answer: Answer, criterion: Criterion, label: str) -> Adjudication:
    made = Adjudication.objects.create(answer=answer, criterion=criterion, label=label)
    written(answer.pk, adjudication=True)
    return made


# The checklist of every trial test: two facts and a format criterion.
TRIAL_CRITERIA = [
    ("States revenue of $4.1 billion.", "fact"),
    ("Presents the figures in a table.", "format"),
    ("States the quarter of the figures.", "fact"),
]


@dataclass
class Compared:
    baseline: Run
    trial: Run
    answers: list[Answer]
    criteria: list[Criterion]
    candidate: Judge


# (answer, criterion) -> (human reference, baseline verdict, trial verdict)
ITEMS = {
    (0, 0): ("pass", "pass", "pass"),  # both right
    (0, 1): ("fail", "pass", "fail"),  # only the trial right
    (1, 0): ("pass", "fail", "pass"),  # only the trial right
    (1, 1): ("fail", "fail", "pass"),  # only the baseline right
    (2, 0): ("pass", "pass", "pass"),  # adjudicated pass over a fail label
    (2, 1): ("fail", "fail", "fail"),  # shown to the candidate as an example: left out
}


@pytest.fixture
def compared(dataset) -> Compared:
    """Five items compared (one more shown as an example, one with tied labels, one without
    a label): the baseline right on 3, the trial on 4; b = 1, c = 2."""
    made = checklisted_query(dataset, criteria=TRIAL_CRITERIA, answers=3)
    answers, criteria = made.answers, made.criteria
    for (a, c), (human, _, _) in ITEMS.items():
        if (a, c) == (2, 0):
            human_label(answers[a], criteria[c], "ann", "fail")
            adjudicate(answers[a], criteria[c], human)
        else:
            human_label(answers[a], criteria[c], "ann", human)
    # Tied labels on (1, 2): no human reference; (0, 2) has no label at all.
    human_label(answers[1], criteria[2], "ann", "pass")
    human_label(answers[1], criteria[2], "bob", "fail")
    current = Judge.objects.create(name="Current", kind=Judge.Kind.EXTERNAL)
    candidate = Judge.objects.create(
        name="Candidate", base_url="http://127.0.0.1:9/v1", model="candidate",
        prompt_price="1.0", completion_price="2.0",
    )  # fmt: skip
    current_panel = PanelFactory(name="Production panel", judges=[current])
    candidate_panel = PanelFactory(name="Candidate panel", judges=[candidate])
    votes = {(answers[a], criteria[c]): [v[1]] for (a, c), v in ITEMS.items()}
    extra = {(answers[0], criteria[2]): ["pass"], (answers[1], criteria[2]): ["pass"]}
    baseline = finished_run(dataset, current_panel, {**votes, **extra})
    baseline.kind = Run.Kind.SYSTEMS
    baseline.save(update_fields=["kind"])
    trial_votes = {(answers[a], criteria[c]): [v[2]] for (a, c), v in ITEMS.items()}
    trial = finished_run(dataset, candidate_panel, {**trial_votes, **extra})
    trial.scope, trial.baseline, trial.kind = Run.Scope.LABELLED, baseline, Run.Kind.SYSTEMS
    trial.snapshot["members"][0]["example_items"] = [[answers[2].pk, criteria[1].pk]]
    trial.save(update_fields=["scope", "baseline", "kind", "snapshot"])
    Verdict.objects.filter(run=trial).update(
        prompt_tokens=100, completion_tokens=20, latency_ms=300, attempts=1
    )
    return Compared(baseline, trial, answers, criteria, candidate)
