"""Issue 23's must-show: an imported nested, weighted rubric with one answer and an external
judge's verdicts scores, in GET /api/runs/{id}/scores/, the tree's weighted mean; bad trees
are refused with file:line:field; the groups go out and come back identical."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from annotation.models import CriterionGroup
from evaluation.datasets.export import ExportOptions, export_chunks
from evaluation.datasets.importer import ImportOptions, ImportRejected, import_dataset
from evaluation.runs.models import Run

pytestmark = pytest.mark.django_db

# Two top groups: A (weight 3) holds A1 (weight 1: c1 pass, c2 fail) and A2 (weight 2: c3
# pass with weight 2, c4 fail with weight 1); B (weight 1) holds c5 pass. Ungrouped: c6 fail.
GROUPS = [("A", "", 3, 0), ("A1", "A", 1, 0), ("A2", "A", 2, 1), ("B", "", 1, 1)]
CRITERIA = [("c1", "A1", 1, "pass"), ("c2", "A1", 1, "fail"), ("c3", "A2", 2, "pass"),
            ("c4", "A2", 1, "fail"), ("c5", "B", 1, "pass"), ("c6", "", 1, "fail")]  # fmt: skip


def expected_tree() -> float:
    a1 = 1 / 2
    a2 = 2 / 3
    a = (1 * a1 + 2 * a2) / 3
    b = 1.0
    return (3 * a + 1 * b + 1 * 0.0) / (3 + 1 + 1)


def files(groups=GROUPS, criteria=CRITERIA, scoring="tree") -> dict[str, list[dict]]:
    q, author = "q1", "expert"
    return {
        "queries": [{"external_id": q, "text": "Summarise it.", "query_date": "2025-01-01"}],
        "checklists": [{"query": q, "author": author, "status": "submitted"}],
        "groups": [{"query": q, "author": author, "external_id": g, "parent": p, "title": g,
                    "weight": w, "position": n} for g, p, w, n in groups],
        "criteria": [{"query": q, "author": author, "external_id": c, "position": n,
                      "text": f"States fact {c}.", "kind": "fact", "weight": w, "group": g}
                     for n, (c, g, w, _) in enumerate(criteria)],
        "systems": [{"name": "S", "version": ""}],
        "answers": [{"system": "S", "query": q, "text": "An answer."}],
        "judges": [{"name": "Outside", "kind": "external"}],
        "panels": [{"name": "Outside panel", "method": "majority", "threshold": 0.5,
                    "members": json.dumps([{"judge": "Outside", "samples": 1}])}],
        "runs": [{"run": "graded", "kind": "imported", "panel": "Outside panel",
                  "status": "done"}],
        "verdicts": [{"run": "graded", "system": "S", "query": q, "author": author,
                      "criterion": c, "judge": "Outside", "sample": 0, "outcome": o}
                     for c, _, _, o in criteria],
        "_meta": [{"name": "Rubric", "scoring": scoring, "schema_version": 1}],
    }  # fmt: skip


def write(tmp_path: Path, tables: dict[str, list[dict]]) -> Path:
    path = tmp_path / "rubric.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name, rows in tables.items():
            if name == "_meta":
                archive.writestr("rubric/dataset.json", json.dumps(rows[0]))
                continue
            archive.writestr(f"rubric/{name}.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_an_imported_tree_scores_its_weighted_mean_in_the_api(tmp_path, client, django_user_model):
    result = import_dataset(write(tmp_path, files()))
    dataset = result.dataset
    assert CriterionGroup.objects.filter(checklist__query__dataset=dataset).count() == 4
    run = Run.objects.get(dataset=dataset)
    admin = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(admin)
    data = client.get(f"/api/runs/{run.pk}/scores/").json()
    answer = data["answers"][0]
    checklist = answer["checklists"][0]
    assert checklist["scoring"] == "tree"
    assert round(checklist["value"], 4) == round(expected_tree(), 4)
    assert round(answer["value"], 4) == round(expected_tree(), 4)
    groups = {g["external_id"]: g for g in checklist["groups"]}
    assert round(groups["A2"]["score"], 4) == round(2 / 3, 4)
    assert (groups["A"]["met"], groups["A"]["missing"]) == (2, 2)


def test_groups_go_out_and_come_back_identical(tmp_path):
    result = import_dataset(write(tmp_path, files()))
    options = ExportOptions.parse(["answers", "verdicts"], ["jsonl"])
    first = b"".join(export_chunks(result.dataset, options))

    def tables(data: bytes) -> dict[str, bytes]:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return {
                n.split("/")[-1]: archive.read(n)
                for n in archive.namelist()
                if n.endswith(("groups.jsonl", "criteria.jsonl", "checklists.jsonl"))
            }

    exported = tables(first)
    groups = [json.loads(line) for line in exported["groups.jsonl"].splitlines()]
    assert {(g["external_id"], g["parent"], g["weight"]) for g in groups} == {
        (g, p, float(w)) for g, p, w, _ in GROUPS
    }
    # Imported back into the same dataset: nothing changes, and it exports the same.
    again = tmp_path / "again.zip"
    again.write_bytes(first)
    assert not import_dataset(again, ImportOptions(dataset=result.dataset)).changed
    assert tables(b"".join(export_chunks(result.dataset, options))) == exported


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda t: t["groups"].__setitem__(0, {**t["groups"][0], "parent": "A1"}),
            "groups.jsonl:1: field 'parent'",
        ),
        (
            lambda t: t["groups"].__setitem__(1, {**t["groups"][1], "parent": "nowhere"}),
            "groups.jsonl:2: field 'parent'",
        ),
        (
            lambda t: t["groups"].__setitem__(3, {**t["groups"][3], "weight": 0}),
            "groups.jsonl:4: field 'weight'",
        ),
        (
            lambda t: t["groups"].__setitem__(3, {**t["groups"][3], "weight": -2}),
            "groups.jsonl:4: field 'weight'",
        ),
        (
            lambda t: t["criteria"].__setitem__(5, {**t["criteria"][5], "weight": -1}),
            "criteria.jsonl:6: field 'weight'",
        ),
    ],
)
def test_bad_trees_are_refused_with_file_line_and_field(tmp_path, change, expected):
    tables = files()
    change(tables)
    with pytest.raises(ImportRejected) as rejected:
        import_dataset(write(tmp_path, tables))
    assert any(e.startswith(expected) for e in rejected.value.errors), rejected.value.errors


def test_exported_scores_carry_the_strategy_and_its_value(tmp_path):
    result = import_dataset(write(tmp_path, files()))
    options = ExportOptions.parse(["answers", "verdicts", "scores"], ["jsonl"])
    data = b"".join(export_chunks(result.dataset, options))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        name = next(n for n in archive.namelist() if n.endswith("/scores.jsonl"))
        (row,) = [json.loads(line) for line in archive.read(name).splitlines()]
    assert row["scoring"] == "tree"
    assert round(row["value"], 4) == round(expected_tree(), 4)
    assert row["score"] == pytest.approx(3 / 6, abs=1e-4)  # the share stays beside it


def test_query_dimensions_go_out_and_come_back_identical(tmp_path):
    tables = files()
    tables["_meta"][0]["dimensions"] = {"file_type": ["pdf", "html"], "sources": []}
    tables["queries"][0]["dimensions"] = {"file_type": "pdf", "sources": "3"}
    result = import_dataset(write(tmp_path, tables))
    query = result.dataset.queries.get()
    assert query.dimensions == {"file_type": "pdf", "sources": "3"}
    options = ExportOptions.parse([], ["jsonl"])
    first = b"".join(export_chunks(result.dataset, options))
    with zipfile.ZipFile(io.BytesIO(first)) as archive:
        names = archive.namelist()
        meta = json.loads(archive.read(next(n for n in names if n.endswith("dataset.json"))))
        queries = archive.read(next(n for n in names if n.endswith("/queries.jsonl")))
    assert meta["dimensions"] == {"file_type": ["pdf", "html"], "sources": []}
    # A json column is nested in JSON Lines (docs/data-formats.md).
    assert json.loads(queries.splitlines()[0])["dimensions"] == query.dimensions
    again = tmp_path / "again.zip"
    again.write_bytes(first)
    assert not import_dataset(again, ImportOptions(dataset=result.dataset)).changed
    second = b"".join(export_chunks(result.dataset, options))
    with zipfile.ZipFile(io.BytesIO(second)) as archive:
        name = next(n for n in archive.namelist() if n.endswith("/queries.jsonl"))
        assert archive.read(name) == queries
