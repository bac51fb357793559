"""Preference labels made elsewhere, imported into a pairwise session by the queries'
external ids (issue 42 point 6): all rows or none, each error naming line and field, the
same file twice changes nothing, and an app vote is never overwritten."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from evaluation.pairwise import figures, services
from evaluation.pairwise.imports import ImportRejected, import_preferences
from evaluation.pairwise.models import PairwiseVote

pytestmark = pytest.mark.django_db


def jsonl(*rows: dict) -> str:
    return "\n".join(json.dumps(r) for r in rows) + "\n"


def ids(session) -> list[str]:
    return list(session.pairs.order_by("pk").values_list("query__external_id", flat=True))


def test_preferences_import_by_external_ids_and_again_changes_nothing(pairwise_session):
    q = ids(pairwise_session)
    content = jsonl(
        {"query": q[0], "rater": "vendor-1", "preference": "a", "reason": "fuller"},
        {"query": q[0], "rater": "vendor-2", "preference": "TIE"},
        {"query": q[1], "rater": "vendor-1", "preference": "b"},
    )
    result = import_preferences(session=pairwise_session, name="prefs.jsonl", content=content)
    assert (result.created, result.updated, result.unchanged, result.raters) == (3, 0, 0, 2)
    votes = PairwiseVote.objects.order_by("pair_id", "rater")
    assert [(v.rater, v.preference, v.first_is_a, v.source) for v in votes] == [
        ("vendor-1", "a", None, "import"), ("vendor-2", "tie", None, "import"),
        ("vendor-1", "b", None, "import"),
    ]  # fmt: skip
    again = import_preferences(session=pairwise_session, name="prefs.jsonl", content=content)
    assert (again.created, again.updated, again.unchanged) == (0, 0, 3)
    assert figures.session_figures(pairwise_session)[0].n == 3
    assert pairwise_session.pairs.first().query.external_id_fixed_by == "labels"


def test_a_bad_file_names_line_and_field_and_imports_nothing(pairwise_session, reviewer):
    q = ids(pairwise_session)
    shown = services.pair_show(session=pairwise_session, reviewer=reviewer)
    services.vote_cast(vote=shown, choice="1")
    mine = shown.pair.query.external_id
    content = jsonl(
        {"query": q[0], "rater": "vendor", "preference": "a"},
        {"query": "nope", "rater": "vendor", "preference": "a"},
        {"query": q[1], "rater": "", "preference": "maybe"},
        {"query": q[0], "rater": "vendor", "preference": "b"},
        {"query": mine, "rater": "reviewer", "preference": "b"},
    )
    with pytest.raises(ImportRejected) as rejected:
        import_preferences(session=pairwise_session, name="p.jsonl", content=content)
    text = str(rejected.value)
    for expected in (
        "p.jsonl:2: field 'query': no pair of this session has query 'nope'",
        "p.jsonl:3: field 'rater' is required",
        "p.jsonl:3: field 'preference' must be one of a, b, tie",
        "p.jsonl:4: same query and rater as line 1",
        "p.jsonl:5: field 'rater': reviewer voted on this pair in the app",
    ):
        assert expected in text
    assert not PairwiseVote.objects.filter(source="import").exists()


def test_the_command_imports_a_csv_and_exits_2_on_errors(pairwise_session, tmp_path):
    q = ids(pairwise_session)
    good = tmp_path / "prefs.csv"
    good.write_text(f"query,rater,preference,reason\n{q[2]},peer,b,=SUM(A1)\n")
    call_command("import_preferences", str(good), "--session", str(pairwise_session.pk))
    assert PairwiseVote.objects.get().preference == "b"
    bad = tmp_path / "bad.csv"
    bad.write_text("query,rater,preference\nmissing,peer,a\n")
    with pytest.raises(CommandError) as failed:
        call_command("import_preferences", str(bad), "--session", str(pairwise_session.pk))
    assert failed.value.returncode == 2
    with pytest.raises(CommandError, match="No pairwise session"):
        call_command("import_preferences", str(good), "--session", "999999")
