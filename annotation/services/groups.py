"""Writes of a checklist's groups (aspects, nodes of a weighted rubric tree) and of which
group a criterion is in. Every write keeps the tree sound: a parent in the same checklist, no
cycle, a positive weight (evaluation.metrics.rubrics scores it)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from decimal import Decimal

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction

from annotation.models import Checklist, Criterion, CriterionGroup
from annotation.services.checklists import (
    CriterionData,
    _lock,
    _lock_criterion,
    _touch,
    criterion_add,
)


class GroupRefused(ValueError):
    """The change would make the tree unsound; the message says why."""


def _check_parent(group: CriterionGroup | None, parent: CriterionGroup | None, checklist_id: int):
    if parent is None:
        return
    if parent.checklist_id != checklist_id:
        raise GroupRefused("The parent group belongs to another checklist.")
    at: CriterionGroup | None = parent
    seen = 0
    while at is not None:
        if group is not None and at.pk == group.pk:
            raise GroupRefused("A group cannot be nested inside itself or its own subgroups.")
        at = at.parent
        seen += 1
        if seen > 10_000:
            raise GroupRefused("The groups' parents form a cycle.")


def _check_weight(weight: Decimal) -> None:
    if weight <= 0:
        raise GroupRefused("A group's weight must be positive.")


@transaction.atomic
def group_create(
    *, checklist: Checklist, by: AbstractBaseUser, title: str, description: str = "",
    weight: Decimal = Decimal(1), parent: CriterionGroup | None = None,
    position: int | None = None, external_id: str = "",
) -> CriterionGroup:  # fmt: skip
    checklist = _lock(checklist.pk)
    _check_weight(weight)
    _check_parent(None, parent, checklist.pk)
    if position is None:
        position = CriterionGroup.objects.filter(checklist=checklist, parent=parent).count()
    group = CriterionGroup.objects.create(
        checklist=checklist, title=title.strip(), description=description, weight=weight,
        parent=parent, position=position, external_id=external_id,
    )  # fmt: skip
    _touch(checklist, by, f"added group “{group.title[:60]}”")
    return group


@transaction.atomic
def group_update(
    *, group: CriterionGroup, by: AbstractBaseUser, **changes: object
) -> CriterionGroup:
    """Change the fields given (title, description, weight, parent, position, external_id)."""
    checklist = _lock(group.checklist_id)
    group = CriterionGroup.objects.get(pk=group.pk)
    if "weight" in changes:
        _check_weight(changes["weight"])  # type: ignore[arg-type]
    reparented = "parent" in changes and changes["parent"] != group.parent
    if "parent" in changes:
        _check_parent(group, changes["parent"], checklist.pk)  # type: ignore[arg-type]
        if reparented and "position" not in changes:  # last among its new siblings
            changes["position"] = CriterionGroup.objects.filter(
                checklist=checklist, parent=changes["parent"]
            ).count()
    for name, value in changes.items():
        setattr(group, name, value)
    if changes:
        group.save(update_fields=list(changes))
    if "parent" in changes or "position" in changes:
        _renumber(checklist.pk)
    _touch(checklist, by, f"edited group “{group.title[:60]}”")
    return group


@transaction.atomic
def group_delete(*, group: CriterionGroup, by: AbstractBaseUser) -> None:
    """Delete a group and its subgroups; their criteria stay, in no group."""
    checklist = _lock(group.checklist_id)
    title = group.title
    group.delete()
    _renumber(checklist.pk)
    _touch(checklist, by, f"deleted group “{title[:60]}”")


@transaction.atomic
def criterion_set_group(
    *, criterion: Criterion, by: AbstractBaseUser, group: CriterionGroup | None
) -> Criterion:
    criterion = _lock_criterion(criterion)
    if group is not None and group.checklist_id != criterion.checklist_id:
        raise GroupRefused("The group belongs to another checklist.")
    criterion.group = group
    criterion.save(update_fields=["group"])
    _touch(criterion.checklist, by, f"moved criterion {criterion.position}")
    return criterion


# --- The editor's order: groups as sections, criteria numbered as a reader meets them -----
#
# A checklist reads as its criteria in no group first, then each group (by position among
# its siblings) with its own criteria and then its subgroups, depth first: the order of the
# editor, the review page and the run's answer page (evaluation.metrics.rubrics._preorder).
# Criterion positions follow that order after every change of the tree made here, so the
# number an expert sees ("criterion 7") is the number the guideline findings name.


def reading_sections(groups: Iterable[tuple[int, int | None]]) -> list[int | None]:
    """None (the criteria in no group), then the groups' ids depth first, from (id, parent
    id) pairs given by position among siblings."""
    children: dict[int | None, list[int]] = defaultdict(list)
    for pk, parent_id in groups:
        children[parent_id].append(pk)
    out: list[int | None] = [None]
    stack = list(reversed(children[None]))
    while stack:
        pk = stack.pop()
        out.append(pk)
        stack.extend(reversed(children.get(pk, [])))
    return out


def section_order(checklist_id: int) -> list[int | None]:
    """The checklist's sections as a reader meets them (reading_sections). One query."""
    rows = CriterionGroup.objects.filter(checklist_id=checklist_id).order_by("position", "id")
    return reading_sections(rows.values_list("pk", "parent_id"))


def _renumber(checklist_id: int, *, placed: tuple[int, str] | None = None) -> None:
    """Number the active criteria 1..n in reading order (section_order, then position);
    `placed` = (criterion id, "start" or "end") puts one criterion at that end of its
    section. Only the rows whose number changes are written."""
    section = {pk: index for index, pk in enumerate(section_order(checklist_id))}
    criteria = list(
        Criterion.objects.filter(checklist_id=checklist_id).active().only("pk", "group", "position")
    )

    def reading(c: Criterion) -> tuple[int, int, int]:
        position = c.position
        if placed is not None and c.pk == placed[0]:
            position = -1 if placed[1] == "start" else 2**31
        return section.get(c.group_id, 0), position, c.pk

    changed = []
    for number, c in enumerate(sorted(criteria, key=reading), start=1):
        if c.position != number:
            c.position = number
            changed.append(c)
    Criterion.objects.bulk_update(changed, ["position"])


def renumber(checklist_id: int) -> None:
    """Criterion positions in reading order (an import or the API may leave them otherwise)."""
    _renumber(checklist_id)


@transaction.atomic
def criterion_add_to_group(
    *, checklist: Checklist, by: AbstractBaseUser, data: CriterionData,
    group: CriterionGroup | None,
) -> Criterion:  # fmt: skip
    """A new criterion at the end of `group` (None: of the criteria in no group)."""
    if group is not None and group.checklist_id != checklist.pk:
        raise GroupRefused("The group belongs to another checklist.")
    criterion = criterion_add(checklist=checklist, by=by, data=data)
    if group is not None:
        Criterion.objects.filter(pk=criterion.pk).update(group=group)
    _renumber(checklist.pk, placed=(criterion.pk, "end"))
    criterion.refresh_from_db()
    return criterion


@transaction.atomic
def criterion_to_group(
    *, criterion: Criterion, by: AbstractBaseUser, group: CriterionGroup | None,
    at: str = "end",
) -> Criterion:  # fmt: skip
    """Move a criterion into `group` (None: out of every group), at its start or end."""
    criterion = criterion_set_group(criterion=criterion, by=by, group=group)
    _renumber(criterion.checklist_id, placed=(criterion.pk, at))
    criterion.refresh_from_db()
    return criterion


@transaction.atomic
def criterion_shift(*, criterion: Criterion, by: AbstractBaseUser, offset: int) -> Criterion:
    """Move a criterion up (offset -1) or down (+1) as the expert reads the checklist: past
    its neighbour in its section, or, at the section's edge, to the near end of the previous
    or next section (its group changes). A no-op at the checklist's ends."""
    criterion = _lock_criterion(criterion)
    checklist = criterion.checklist
    _renumber(checklist.pk)
    criterion.refresh_from_db(fields=["position", "group"])
    same_section = checklist.criteria.active().filter(group_id=criterion.group_id)
    if offset < 0:
        neighbour = same_section.filter(position__lt=criterion.position).order_by("-position")
    else:
        neighbour = same_section.filter(position__gt=criterion.position).order_by("position")
    other = neighbour.first()
    if other is not None:
        other.position, criterion.position = criterion.position, other.position
        Criterion.objects.bulk_update([other, criterion], ["position"])
        _touch(checklist, by, f"moved criterion to {criterion.position}")
        return criterion
    return _to_next_section(criterion, by, offset)


@transaction.atomic
def criterion_shift_group(*, criterion: Criterion, by: AbstractBaseUser, offset: int) -> Criterion:
    """Move a criterion straight into the previous (offset -1, at its end) or next section
    (+1, at its start), whatever its place in its own. A no-op at the first or last one."""
    criterion = _lock_criterion(criterion)
    return _to_next_section(criterion, by, offset)


def _to_next_section(criterion: Criterion, by: AbstractBaseUser, offset: int) -> Criterion:
    order = section_order(criterion.checklist_id)
    index = order.index(criterion.group_id) + (-1 if offset < 0 else 1)
    if not 0 <= index < len(order):
        return criterion
    criterion.group_id = order[index]
    criterion.save(update_fields=["group"])
    _renumber(criterion.checklist_id, placed=(criterion.pk, "end" if offset < 0 else "start"))
    criterion.refresh_from_db(fields=["position", "group"])
    _touch(criterion.checklist, by, f"moved criterion to {criterion.position}")
    return criterion


@transaction.atomic
def group_shift(*, group: CriterionGroup, by: AbstractBaseUser, offset: int) -> CriterionGroup:
    """Move a group up (-1) or down (+1) among its siblings, with its criteria and
    subgroups; a no-op at the ends."""
    checklist = _lock(group.checklist_id)
    siblings = list(
        CriterionGroup.objects.filter(checklist=checklist, parent_id=group.parent_id).order_by(
            "position", "id"
        )
    )
    index = next(i for i, g in enumerate(siblings) if g.pk == group.pk)
    other = index + (-1 if offset < 0 else 1)
    if not 0 <= other < len(siblings):
        return siblings[index]
    siblings[index], siblings[other] = siblings[other], siblings[index]
    for position, sibling in enumerate(siblings):
        sibling.position = position
    CriterionGroup.objects.bulk_update(siblings, ["position"])
    _renumber(checklist.pk)
    _touch(checklist, by, f"moved group “{group.title[:60]}”")
    return siblings[other]
