"""The fixed samples of items that runs of scope "listed" grade (evaluation.metrics.sampling
draws them): a judge canary's sample of the dataset's labelled items, the same every night
while the labels stay, and a stability pass's sample of the items its run graded."""

from __future__ import annotations

from django.db.models import Exists, OuterRef

from evaluation.checks.models import CriterionCheck
from evaluation.metrics.sampling import Item, sample_items
from evaluation.runs import scope
from evaluation.runs.models import Run, Verdict


def canary_seed(dataset_id: int) -> str:
    # The dataset's, not the night's: two canaries of a dataset draw the same items.
    return f"canary:{dataset_id}"


def labelled_of(dataset_id: int) -> set[Item]:
    """The dataset's labelled items (a label or an adjudication on a scored criterion)."""
    return scope.labelled_items(scope.Selection(dataset_id=dataset_id, scope=Run.Scope.LABELLED))


def canary_sample(
    dataset_id: int, size: int | None, *, labelled: set[Item] | None = None
) -> list[Item]:
    """`size` of the dataset's labelled items (all of them when None): those a judge
    canary of that size grades. `labelled`: the dataset's, when already read."""
    if labelled is None:
        labelled = labelled_of(dataset_id)
    return sample_items(labelled, size, seed=canary_seed(dataset_id))


def judged_items(run: Run, judge_id: int) -> set[Item]:
    """The items of `run` the judge voted on, on criteria still graded and not decided by
    a deterministic check (which makes no call: nothing to measure). One query, one row per
    item."""
    checked = CriterionCheck.objects.filter(criterion=OuterRef("criterion")).exclude(kind="")
    rows = (
        Verdict.objects.filter(run=run, judge=judge_id, criterion__in=scope.scored_criteria())
        .filter(~Exists(checked))
        .values_list("answer_id", "criterion_id")
        .distinct()
        .order_by()
    )
    return set(rows)


def pass_sample(run: Run, judge_id: int, size: int) -> list[Item]:
    """`size` of the run's items the judge voted on: those a stability pass grades."""
    return sample_items(judged_items(run, judge_id), size, seed=f"stability:{run.pk}")
