"""The checklists' groups as scoring trees, and the strategy each checklist is scored by:
the reads that runs' scores, the answer page and the reward service share."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from annotation import scoring
from annotation.models import CriterionGroup, Dataset
from evaluation.metrics.rubrics import Group, Tree


def trees_of(checklist_ids: Iterable[int]) -> dict[int, Tree]:
    """Each checklist's groups, checked (rubrics.Tree), keyed by checklist id; a checklist
    without groups has none. One query. A group's key is its id as text."""
    rows: dict[int, list[Group]] = defaultdict(list)
    found = CriterionGroup.objects.filter(checklist_id__in=list(checklist_ids)).values_list(
        "pk", "checklist_id", "parent_id", "weight", "title", "external_id", "position"
    )
    for pk, checklist_id, parent_id, weight, title, external_id, position in found:
        parent = None if parent_id is None else str(parent_id)
        rows[checklist_id].append(
            Group(str(pk), parent, weight, title, external_id or f"group-{pk}", position)
        )
    return {checklist_id: Tree.of(groups) for checklist_id, groups in rows.items()}


def strategy_of(dataset: Dataset, checklist_scoring: str) -> str:
    """The strategy a checklist is scored by: its own, else its dataset's."""
    return scoring.strategy_of(dataset.scoring, checklist_scoring)


def undecided_of(dataset: Dataset, checklist_undecided: str) -> str:
    """What a checklist's undecided criteria count as: its own setting, else its dataset's."""
    return scoring.undecided_of(dataset.undecided, checklist_undecided)


def group_key(group_id: int | None) -> str | None:
    return None if group_id is None else str(group_id)
