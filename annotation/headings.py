"""Criteria in the order a checklist reads, with the group headings that open before each.

A checklist reads its criteria in no group first, then each group depth first (a group's
own criteria, then its subgroups: annotation.services.groups.reading_sections). Pages that
list criteria (the query page, the review page) show a group's title, indented by depth,
before the first criterion under it; a group that only holds subgroups gets its heading
before its first subgroup's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from annotation.models import Criterion, CriterionGroup
from annotation.services.groups import reading_sections

T = TypeVar("T")


@dataclass(frozen=True)
class GroupHeading:
    """A group's heading, shown before the first of its criteria."""

    title: str
    depth: int  # 1 for a top-level group
    first_level: int = 3  # the HTML heading level of a top-level group on this page

    @property
    def level(self) -> int:
        return min(self.first_level + self.depth - 1, 6)


def in_reading_order(
    items: Iterable[T], *, criterion_of: Callable[[T], Criterion], first_level: int = 3
) -> list[T]:
    """`items` (criteria, or rows that hold one) sorted as their checklists read, each given
    `headings`: the GroupHeadings that open before it. One query, for any number of
    checklists; items of a checklist without groups keep their position order."""
    items = list(items)
    for item in items:
        item.headings = ()
    checklist_ids = {criterion_of(item).checklist_id for item in items}
    found = (
        CriterionGroup.objects.filter(checklist_id__in=checklist_ids)
        .order_by("position", "id")
        .values_list("pk", "checklist_id", "parent_id", "title")
    )
    if not found:
        return items
    groups: dict[int, tuple[int | None, str]] = {}
    pairs: dict[int, list[tuple[int, int | None]]] = {}
    for pk, checklist_id, parent_id, title in found:
        groups[pk] = (parent_id, title)
        pairs.setdefault(checklist_id, []).append((pk, parent_id))
    section = {
        pk: index
        for checklist_pairs in pairs.values()
        for index, pk in enumerate(reading_sections(checklist_pairs))
        if pk is not None
    }

    def path(group_id: int | None) -> list[int]:
        out: list[int] = []
        while group_id is not None:
            out.append(group_id)
            group_id = groups[group_id][0]
        return out[::-1]

    def order(item: T) -> tuple[int, int, int]:
        criterion = criterion_of(item)
        return criterion.checklist_id, section.get(criterion.group_id, 0), criterion.position

    ordered = sorted(items, key=order)
    shown: list[int] = []
    last_checklist = None
    for item in ordered:
        criterion = criterion_of(item)
        if criterion.checklist_id != last_checklist:
            shown, last_checklist = [], criterion.checklist_id
        here = path(criterion.group_id)
        common = 0
        while common < min(len(here), len(shown)) and here[common] == shown[common]:
            common += 1
        item.headings = tuple(
            GroupHeading(groups[pk][1], depth, first_level)
            for depth, pk in enumerate(here, 1)
            if depth > common
        )
        shown = here
    return ordered
