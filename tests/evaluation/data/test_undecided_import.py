"""Issue 41's must-show: a dataset imported from a file whose answers have undecided
criteria (an unparseable verdict), with `undecided` = `not_met` in its dataset.json, scores
in GET /api/runs/{id}/scores/ what each strategy's source tool gives (Axion AnswerCriteria's
concept, aspect and blend, PaperBench's tree, HealthBench's points: tests/support/
peer_oracles.py), one test per strategy; with `excluded` (the default) the figure of
before. The scores carry their undecided count and the setting; the settings round-trip
through the export."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from evaluation.datasets.export import ExportOptions, export_chunks
from evaluation.datasets.importer import ImportRejected, import_dataset
from evaluation.runs.models import Run
from tests.evaluation.data.test_rubric_import import write
from tests.support import peer_oracles as peers

pytestmark = pytest.mark.django_db

# Aspects A {met, met, undecided}, B {met, not met}, C {undecided}, D {met}: weights 1.
ASPECTS = [("A", ["pass", "pass", "unparseable"]), ("B", ["pass", "fail"]),
           ("C", ["unparseable"]), ("D", ["pass"])]  # fmt: skip
# A tree: Facts (3) {met 1, met 1, undecided 2}, Form (1) {met 1, not met 1}.
TREE = [("Facts", 3, [(1, "pass"), (1, "pass"), (2, "unparseable")]),
        ("Form", 1, [(1, "pass"), (1, "fail")])]  # fmt: skip
# Points: +3 met, +5 not met, +2 undecided, a penalty of 2 avoided, a penalty of 1 undecided.
POINTS = [(3, "pass"), (5, "fail"), (2, "unparseable"), (-2, "fail"), (-1, "unparseable")]


def grade(outcome: str) -> bool | None:
    return {"pass": True, "fail": False}.get(outcome)


def tables(
    groups, criteria, *, scoring: str, undecided: str | None, name: str = "Undecided"
) -> dict[str, list[dict]]:
    """groups: (key, weight); criteria: (key, group, weight, outcome)."""
    q, author = "q1", "expert"
    meta = {"name": name, "scoring": scoring, "schema_version": 1}
    if undecided is not None:
        meta["undecided"] = undecided
    return {
        "queries": [{"external_id": q, "text": "Summarise it.", "query_date": "2025-01-01"}],
        "checklists": [{"query": q, "author": author, "status": "submitted"}],
        "groups": [{"query": q, "author": author, "external_id": g, "parent": "", "title": g,
                    "weight": w, "position": n} for n, (g, w) in enumerate(groups)],
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
        "_meta": [meta],
    }  # fmt: skip


def aspect_case(strategy: str, undecided: str | None, name: str = "Undecided"):
    groups = [(g, 1) for g, _ in ASPECTS]
    criteria = [(f"{g}{n}", g, 1, o) for g, outs in ASPECTS for n, o in enumerate(outs)]
    return tables(groups, criteria, scoring=strategy, undecided=undecided, name=name)


def scores_of(tmp_path, client, admin, files) -> dict:
    dataset = import_dataset(write(tmp_path, files)).dataset
    client.force_login(admin)
    run = Run.objects.get(dataset=dataset)
    return client.get(f"/api/runs/{run.pk}/scores/").json()["answers"][0]


def excluded_dir(tmp_path):
    """A second folder for the same case imported again under `excluded`."""
    other = tmp_path / "excluded"
    other.mkdir()
    return other


@pytest.fixture
def admin(django_user_model):
    return django_user_model.objects.create_superuser("root", "root@example.com", "pw")


def axion_aspects() -> list[list[peers.Criterion]]:
    return [[peers.Criterion(1, grade(o)) for o in outs] for _, outs in ASPECTS]


@pytest.mark.parametrize(
    ("strategy", "expected", "before"),
    [
        ("concept", lambda a: peers.axion_concept([c for x in a for c in x]), 0.8),
        ("aspect", peers.axion_aspect, 2 / 3),
        ("blend", lambda a: peers.axion_blend(a, 0.7), 0.76),
    ],
)
def test_axions_strategies_through_the_import_and_the_api(
    tmp_path, client, admin, strategy, expected, before
):
    answer = scores_of(tmp_path, client, admin, aspect_case(strategy, "not_met"))
    checklist = answer["checklists"][0]
    assert checklist["scoring"] == strategy and checklist["undecided_as"] == "not_met"
    assert checklist["value"] == pytest.approx(expected(axion_aspects()))
    assert answer["undecided"] == 2 and checklist["score"]["undecided"] == 2
    # Excluded (the dataset.json says nothing): the figure of before.
    answer = scores_of(excluded_dir(tmp_path), client, admin, aspect_case(strategy, None, "Before"))
    assert answer["checklists"][0]["undecided_as"] == "excluded"
    assert answer["value"] == pytest.approx(before)


def test_paperbench_tree_through_the_import_and_the_api(tmp_path, client, admin):
    groups = [(g, w) for g, w, _ in TREE]
    criteria = [(f"{g}{n}", g, w, o) for g, _, leaves in TREE for n, (w, o) in enumerate(leaves)]
    answer = scores_of(
        tmp_path, client, admin, tables(groups, criteria, scoring="tree", undecided="not_met")
    )
    root = peers.Aspect(1, [
        peers.Aspect(w, [peers.Criterion(lw, grade(o)) for lw, o in leaves])
        for _, w, leaves in TREE
    ])  # fmt: skip
    assert answer["value"] == pytest.approx(peers.paperbench(root)) == pytest.approx(0.5)
    facts = answer["checklists"][0]["groups"][0]
    assert (facts["met"], facts["missing"], facts["undecided"]) == (2, 0, 1)
    assert facts["score"] == pytest.approx(0.5)
    # Excluded (the dataset.json says nothing): the figure of before, PaperBench's on the
    # decided leaves.
    before = scores_of(
        excluded_dir(tmp_path), client, admin,
        tables(groups, criteria, scoring="tree", undecided=None, name="Before"),
    )  # fmt: skip
    assert before["checklists"][0]["undecided_as"] == "excluded"
    assert before["value"] == pytest.approx(peers.paperbench(peers.decided_only(root)))
    assert before["value"] == pytest.approx(0.875) and before["undecided"] == 1


def test_healthbench_points_through_the_import_and_the_api(tmp_path, client, admin):
    criteria = [(f"c{n}", "", w, o) for n, (w, o) in enumerate(POINTS)]
    answer = scores_of(
        tmp_path, client, admin, tables([], criteria, scoring="points", undecided="not_met")
    )
    listed = [peers.Criterion(w, grade(o)) for w, o in POINTS]
    expected = peers.healthbench_clipped(listed)
    assert answer["value"] == pytest.approx(expected) == pytest.approx(0.3)
    assert answer["undecided"] == 2
    # Excluded: the figure of before, HealthBench's on the decided criteria.
    before = scores_of(
        excluded_dir(tmp_path), client, admin,
        tables([], criteria, scoring="points", undecided=None, name="Before"),
    )  # fmt: skip
    assert before["checklists"][0]["undecided_as"] == "excluded"
    decided = [c for c in listed if c.grade is not None]
    assert before["value"] == pytest.approx(peers.healthbench_clipped(decided))
    assert before["value"] == pytest.approx(0.375) and before["undecided"] == 2


def test_the_settings_round_trip_through_the_export(tmp_path):
    files = aspect_case("aspect", "not_met")
    files["checklists"][0]["undecided"] = "excluded"
    dataset = import_dataset(write(tmp_path, files)).dataset
    assert dataset.undecided == "not_met"
    checklist = dataset.queries.get().checklists.get()
    assert checklist.undecided == "excluded"
    options = ExportOptions.parse(["answers", "verdicts", "scores"], ["jsonl"])
    with zipfile.ZipFile(io.BytesIO(b"".join(export_chunks(dataset, options)))) as archive:
        names = {n.split("/")[-1]: n for n in archive.namelist()}
        meta = json.loads(archive.read(names["dataset.json"]))
        rows = [json.loads(x) for x in archive.read(names["checklists.jsonl"]).splitlines()]
        scores = [json.loads(x) for x in archive.read(names["scores.jsonl"]).splitlines()]
    assert meta["undecided"] == "not_met"
    assert rows[0]["undecided"] == "excluded"
    assert scores[0]["undecided"] == 2 and scores[0]["undecided_as"] == "excluded"


def test_an_unknown_setting_is_refused_naming_the_field(tmp_path):
    files = aspect_case("aspect", "zero")
    files["checklists"][0]["undecided"] = "never"
    with pytest.raises(ImportRejected) as refused:
        import_dataset(write(tmp_path, files))
    text = "\n".join(refused.value.errors)
    assert "field 'undecided'" in text and "checklists.jsonl:1: field 'undecided'" in text
