"""Groups are imported in bulk (issue 23: a checklist of 2,000 criteria in 500 groups imports
in under a second): the number of queries does not grow with the groups, a group whose
parent comes after it in the file is linked, and a re-import that only moves a group under
another parent counts it as changed (so that the kept figures move: bulk writes send no
signal)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import CriterionGroup
from evaluation.datasets.importer import ImportOptions, import_dataset
from tests.evaluation.data.test_rubric_import import CRITERIA, files, write

pytestmark = pytest.mark.django_db


def many_groups(n: int) -> list[tuple[str, str, int, int]]:
    # A chain listed children first: every parent comes after its child in the file.
    return [(f"g{i}", f"g{i + 1}" if i + 1 < n else "", 1 + i % 3, i) for i in range(n)]


def in_g0() -> list[tuple[str, str, int, str]]:
    return [(c, "g0", w, o) for c, _, w, o in CRITERIA]


def queries_of_import(tmp_path, groups) -> int:
    tmp_path.mkdir()
    tables = files(groups=groups, criteria=in_g0())
    tables["_meta"][0]["name"] = f"Rubric of {len(groups)} groups ({tmp_path.name})"
    path = write(tmp_path, tables)
    with CaptureQueriesContext(connection) as captured:
        result = import_dataset(path)
    assert result.created["groups"] == len(groups)
    return len(captured.captured_queries)


def test_the_queries_of_an_import_do_not_grow_with_its_groups(tmp_path):
    # The first import also creates the site-wide user, system, judge and panel.
    queries_of_import(tmp_path / "warm-up", many_groups(2))
    # Each measured twice, keeping the fewer: in a long test session a once-a-while write
    # (a throttled marker) can land in either import, and it says nothing about groups.
    few = min(queries_of_import(tmp_path / f"few-{i}", many_groups(3)) for i in range(2))
    many = min(queries_of_import(tmp_path / f"many-{i}", many_groups(60)) for i in range(2))
    assert many == few


def test_parents_listed_after_their_children_are_linked(tmp_path):
    result = import_dataset(write(tmp_path, files(groups=many_groups(5), criteria=in_g0())))
    parents = dict(
        CriterionGroup.objects.filter(checklist__query__dataset=result.dataset).values_list(
            "external_id", "parent__external_id"
        )
    )
    assert parents == {"g0": "g1", "g1": "g2", "g2": "g3", "g3": "g4", "g4": None}


def test_a_group_moved_under_another_parent_counts_as_changed(tmp_path):
    first = import_dataset(write(tmp_path, files()))
    moved = [("A", "", 3, 0), ("A1", "B", 1, 0), ("A2", "A", 2, 1), ("B", "", 1, 1)]
    again = import_dataset(
        write(tmp_path, files(groups=moved)), ImportOptions(dataset=first.dataset)
    )
    assert (again.created["groups"], again.updated["groups"], again.unchanged["groups"]) == (
        0, 1, 3,
    )  # fmt: skip
    assert again.changed
    a1 = CriterionGroup.objects.get(checklist__query__dataset=first.dataset, external_id="A1")
    assert a1.parent.external_id == "B"
    same = import_dataset(
        write(tmp_path, files(groups=moved)), ImportOptions(dataset=first.dataset)
    )
    assert not same.changed
