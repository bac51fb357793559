"""Which scoring choices are sound: the one check that a checklist's strategy (its own,
else its dataset's) can score the weights of its criteria. It runs wherever either is
chosen, before anything is written: a dataset's `scoring` (the settings page,
`PATCH /api/datasets/{id}/`, the admin), a criterion's weight (the checklist editor,
`POST`/`PATCH /api/criteria/`, a checklist created with its criteria, the admin's checklist
page) and the dataset import (evaluation.datasets.import_checks). The strategies themselves
are evaluation.metrics.rubrics.

`tree` takes positive criterion weights only (docs/metrics.md#scoring-strategies): a node
is a weight-normalised mean, which a penalty (a negative weight) would take out of [0, 1],
and a criterion of weight 0 would count as decided in its group while moving no node.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from django.core.exceptions import ValidationError

from annotation.models import Checklist, Criterion, Dataset, Scoring, Undecided

# The strategies that score positive criterion weights only.
POSITIVE_WEIGHTS_ONLY = frozenset({Scoring.TREE.value})

Weight = Decimal | float | int


def strategy_of(dataset_scoring: str, checklist_scoring: str = "") -> str:
    """The strategy a checklist is scored by: its own, else its dataset's, else `share`."""
    return checklist_scoring or dataset_scoring or Scoring.SHARE.value


def undecided_of(dataset_undecided: str, checklist_undecided: str = "") -> str:
    """What a checklist's undecided criteria count as: its own setting, else its dataset's,
    else `excluded`."""
    return checklist_undecided or dataset_undecided or Undecided.EXCLUDED.value


def weight_problem(strategy: str, weight: Weight) -> str | None:
    """Why `strategy` cannot score a criterion of this weight; None when it can."""
    if strategy not in POSITIVE_WEIGHTS_ONLY or weight > 0:
        return None
    what = "a penalty (negative weight)" if weight < 0 else "a weight of 0"
    return f"{what} cannot be scored by the {strategy} strategy, which takes positive weights only"


class ScoringRefused(ValidationError):
    """A scoring choice refused. `field` is the field whose value was refused (`scoring`,
    `weight`), `criterion` names the criterion at fault as the caller's user knows it."""

    def __init__(self, field: str, criterion: str, problem: str) -> None:
        self.field, self.criterion, self.problem = field, criterion, problem
        super().__init__({field: [f"{criterion}: {problem}"]})


def validate_scoring(strategy: str, criteria: Iterable[tuple[str, Weight]], *, field: str) -> None:
    """Refuse `strategy` for these (name, weight) criteria: ScoringRefused naming `field`
    and the first criterion it cannot score."""
    for name, weight in criteria:
        problem = weight_problem(strategy, weight)
        if problem:
            raise ScoringRefused(field, name, problem)


def validate_dataset_scoring(dataset: Dataset, scoring: str) -> None:
    """Refuse `scoring` as the dataset's strategy when a checklist that follows it (one
    with no strategy of its own) has a criterion it cannot score, archived ones included
    (their verdicts are still scored). No query for a strategy that takes every weight."""
    if dataset.pk is None or scoring not in POSITIVE_WEIGHTS_ONLY:
        return
    rows = (
        Criterion.objects.filter(checklist__query__dataset=dataset, checklist__scoring="")
        .order_by("checklist_id", "position", "pk")
        .values_list("pk", "checklist_id", "position", "weight")
    )
    # Read whole, not through a server-side cursor: a refusal raised mid-read would leave
    # PostgreSQL a cursor to close inside the savepoint that the refusal rolls back.
    validate_scoring(
        scoring,
        [(f"criterion {n} (id {pk}) of checklist {c}", w) for pk, c, n, w in rows],
        field="scoring",
    )


def validate_checklist_scoring(checklist: Checklist, strategy: str) -> None:
    """Refuse `strategy` (a checklist's own; empty: its dataset's) when a criterion of the
    checklist, archived ones included, has a weight it cannot score. No query for a
    strategy that takes every weight."""
    effective = strategy_of(checklist.query.dataset.scoring, strategy)
    if effective not in POSITIVE_WEIGHTS_ONLY:
        return
    rows = Criterion.objects.filter(checklist=checklist).order_by("position", "pk")
    validate_scoring(
        effective,
        [
            (f"criterion {n} (id {pk})", w)
            for pk, n, w in rows.values_list("pk", "position", "weight")
        ],
        field="scoring",
    )


def validate_criterion_weight(checklist: Checklist, weight: Weight, criterion: str) -> None:
    """Refuse `weight` for a criterion of `checklist` (its query and dataset loaded) that its
    strategy cannot score. No query."""
    strategy = strategy_of(checklist.query.dataset.scoring, checklist.scoring)
    validate_scoring(strategy, [(criterion, weight)], field="weight")
