"""Pairwise sessions and votes in the dataset export and import (issue 42 point 6): human
votes and judge replies go out in `pairwise_sessions` / `pairwise_votes` and come back by an
import of the same zip, into a fresh database and into the dataset again (changing nothing);
CSV cells a spreadsheet would run are neutralised; a vote naming an answer the files do not
hold is refused by line and field, nothing written; an export from before these tables
still imports."""

from __future__ import annotations

import csv
import io
import json

import pytest

from annotation import roles, services
from bench.data_io.generate import generate
from evaluation.answers.models import Answer
from evaluation.datasets.export import ExportOptions, export_chunks
from evaluation.datasets.importer import ImportOptions, import_dataset
from evaluation.judges.models import Judge
from evaluation.pairwise import services as pairwise
from evaluation.pairwise.models import PairwiseJudgeVote, PairwiseSession, PairwiseVote
from evaluation.tables.rows import ImportRejected
from tests.evaluation.data.imports import empty_the_database
from tests.evaluation.data.zips import jsonl, members, unzip, write_zip
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

HOSTILE = '=HYPERLINK("http://evil.example","click")'


@pytest.fixture
def voted():
    """A generated dataset with a session System 0 vs System 1: two reviewers vote on every
    pair (one with a hostile reason), a judge replies in both orders on every pair."""
    dataset = generate("Pairwise trip", queries=3, systems=2, criteria=2, judges=1)
    answers = Answer.objects.filter(query__dataset=dataset, checklist__isnull=True)
    first = answers.filter(system__name="System 0").first()
    second = answers.filter(system__name="System 1").first()
    admin = dataset.created_by
    session = pairwise.session_create(
        dataset=dataset, name="Blind one", system_a=first.system, run_label_a=first.run_label,
        system_b=second.system, run_label_b=second.run_label, reviewers_per_pair=2, by=admin,
    )  # fmt: skip
    for n, name in enumerate(("voter-one", "voter-two")):
        user = UserFactory(username=name)
        services.dataset_set_role(dataset=dataset, user=user, role=roles.DatasetRole.REVIEWER)
        while (shown := pairwise.pair_show(session=session, reviewer=user)) is not None:
            reason = HOSTILE if n == 0 else "Cites the filing."
            pairwise.vote_cast(vote=shown, choice=("1", "tie")[n], reason=reason)
    judge = Judge.objects.order_by("pk").first()
    for pair in session.pairs.all():
        for order, side in (("ab", "a"), ("ba", "b")):
            PairwiseJudgeVote.objects.create(
                pair=pair, judge=judge, order=order, preference=side, rationale="-1 for tone",
                outcome=PairwiseJudgeVote.Outcome.VOTED, cache_key=f"k{pair.pk}{order}",
                raw_output='{"better": "1"}', prompt_tokens=12, latency_ms=30,
            )  # fmt: skip
    return dataset, session


def _state(dataset) -> list[tuple]:
    """Every vote of the dataset's sessions, by what names it in the files."""
    human = PairwiseVote.objects.filter(pair__session__dataset=dataset).values_list(
        "pair__session__name", "pair__query__external_id", "pair__answer_a__system__name",
        "pair__answer_b__system__name", "rater", "reviewer__username", "first_is_a",
        "preference", "reason", "source",
    )  # fmt: skip
    judged = PairwiseJudgeVote.objects.filter(pair__session__dataset=dataset).values_list(
        "pair__session__name", "pair__query__external_id", "judge__name", "sample", "order",
        "outcome", "preference", "rationale", "raw_output", "prompt_tokens", "latency_ms",
    )  # fmt: skip
    return sorted(map(tuple, human)) + sorted(map(tuple, judged))


def test_votes_go_out_and_come_back(voted, tmp_path):
    dataset, _session = voted
    before = _state(dataset)
    assert len(before) == 3 * 2 + 3 * 2
    first = b"".join(export_chunks(dataset))
    manifest = json.loads(members(first)["manifest.json"])
    assert manifest["tables"]["pairwise_sessions"]["rows"] == 1
    assert manifest["tables"]["pairwise_votes"]["rows"] == 12
    (row,) = jsonl(first, "pairwise_sessions.jsonl")
    assert (row["session"], row["system_a"], row["system_b"]) == (
        "Blind one", "System 0", "System 1",
    )  # fmt: skip
    votes = jsonl(first, "pairwise_votes.jsonl")
    human = [v for v in votes if v["voter"] == "reviewer"]
    # voter-one always chose "1": side A where A was shown first, else B (the sides' terms).
    assert all(
        v["preference"] == ("a" if v["first_is_a"] else "b")
        for v in human if v["rater"] == "voter-one"
    )  # fmt: skip
    assert all(v["first_is_a"] in (True, False) and v["reviewer"] == v["rater"] for v in human)
    judged = [v for v in votes if v["voter"] == "judge"]
    assert {(v["order"], v["preference"]) for v in judged} == {("ab", "a"), ("ba", "b")}
    assert all(v["answer_a"] is not None and v["query"].startswith("Q") for v in votes)

    path = tmp_path / "first.zip"
    path.write_bytes(first)
    empty_the_database()
    result = import_dataset(path, ImportOptions(copy_members=True))
    assert result.created["pairwise_sessions"] == 1 and result.created["pairwise_votes"] == 12
    assert _state(result.dataset) == before
    again = import_dataset(path, ImportOptions(dataset=result.dataset))
    assert not again.changed, again.rows
    second = b"".join(export_chunks(result.dataset))
    strip = lambda rows: [{k: v for k, v in r.items() if k != "id"} for r in rows]  # noqa: E731
    for name in ("pairwise_sessions.jsonl", "pairwise_votes.jsonl"):
        assert strip(jsonl(second, name)) == strip(jsonl(first, name))
    assert members(second)["pairwise_votes.csv"] == members(first)["pairwise_votes.csv"]


def test_a_hostile_reason_is_neutralised_in_csv_and_read_back_whole(voted, tmp_path):
    dataset, _session = voted
    data = b"".join(export_chunks(dataset, ExportOptions.parse(["pairwise"], ["csv"])))
    rows = list(csv.DictReader(io.StringIO(members(data)["pairwise_votes.csv"].decode())))
    assert {r["reason"] for r in rows if r["rater"] == "voter-one"} == {"'" + HOSTILE}
    assert {r["reason"] for r in rows if r["voter"] == "judge"} == {"'-1 for tone"}
    path = tmp_path / "csv.zip"
    path.write_bytes(data)
    empty_the_database()
    result = import_dataset(path, ImportOptions())
    reasons = set(PairwiseVote.objects.values_list("reason", flat=True))
    assert reasons == {HOSTILE, "Cites the filing."}
    assert set(PairwiseJudgeVote.objects.values_list("rationale", flat=True)) == {"-1 for tone"}
    assert result.created["pairwise_votes"] == 12


def test_a_vote_naming_an_unknown_answer_is_refused_and_nothing_written(voted, tmp_path):
    dataset, _session = voted
    files = members(b"".join(export_chunks(dataset, ExportOptions.parse(None, ["jsonl"]))))
    votes = [json.loads(line) for line in files["pairwise_votes.jsonl"].decode().splitlines()]
    votes[2]["answer_b_sample"] = 7
    votes[4]["voter"] = "reviewer"
    votes[4]["preference"] = ""
    files["pairwise_votes.jsonl"] = "".join(json.dumps(v) + "\n" for v in votes).encode()
    path = write_zip(tmp_path / "bad.zip", files)
    empty_the_database()
    with pytest.raises(ImportRejected) as refused:
        import_dataset(path, ImportOptions())
    assert refused.value.errors[0].startswith("pairwise_votes.jsonl:3: field 'answer_b_sample'")
    assert any(
        e.startswith("pairwise_votes.jsonl:5: field 'preference' is required")
        for e in refused.value.errors
    )
    assert not PairwiseSession.objects.exists() and not Answer.objects.exists()


def test_an_export_from_before_the_pairwise_tables_still_imports(voted, tmp_path):
    dataset, _session = voted
    files = members(b"".join(export_chunks(dataset, ExportOptions.parse(None, ["jsonl"]))))
    older = {n: d for n, d in files.items() if not n.startswith("pairwise_")}
    path = write_zip(tmp_path / "older.zip", older)
    empty_the_database()
    result = import_dataset(path, ImportOptions())
    assert result.created["answers"] > 0
    assert "pairwise_votes" not in result.created and not PairwiseSession.objects.exists()


def test_the_votes_load_with_hugging_face_datasets(voted, tmp_path):
    datasets = pytest.importorskip("datasets")
    dataset, _session = voted
    folder = unzip(b"".join(export_chunks(dataset)), tmp_path)
    cache = str(tmp_path / "hf-cache")
    for fmt, builder in (("parquet", "parquet"), ("jsonl", "json")):
        votes = datasets.load_dataset(
            builder, data_files=str(folder / f"pairwise_votes.{fmt}"), split="train",
            cache_dir=cache,
        )  # fmt: skip
        assert votes.num_rows == 12
        assert sorted(set(votes["voter"])) == ["judge", "reviewer"]
        assert set(votes["preference"]) <= {"a", "b", "tie"}


def test_a_session_named_twice_or_with_other_sides_is_refused(voted, tmp_path):
    dataset, _session = voted
    files = members(b"".join(export_chunks(dataset, ExportOptions.parse(None, ["jsonl"]))))
    (row,) = [json.loads(line) for line in files["pairwise_sessions.jsonl"].decode().splitlines()]
    swapped = {**row, "system_a": row["system_b"], "system_b": row["system_a"]}
    files["pairwise_sessions.jsonl"] = (json.dumps(row) + "\n" + json.dumps(row) + "\n").encode()
    twice = write_zip(tmp_path / "twice.zip", files)
    with pytest.raises(ImportRejected) as refused:
        import_dataset(twice, ImportOptions(dataset=dataset))
    assert refused.value.errors == [
        "pairwise_sessions.jsonl:2: same session as pairwise_sessions.jsonl:1; one row each"
    ]
    files["pairwise_sessions.jsonl"] = (json.dumps(swapped) + "\n").encode()
    other = write_zip(tmp_path / "other.zip", files)
    with pytest.raises(ImportRejected) as refused:
        import_dataset(other, ImportOptions(dataset=dataset))
    assert refused.value.errors[0] == (
        "pairwise_sessions.jsonl:1: field 'session': the dataset's session 'Blind one' "
        "compares other sides"
    )
    assert PairwiseVote.objects.count() == 6 and PairwiseSession.objects.count() == 1


def test_a_vote_on_a_stored_pair_must_name_its_answers(voted, tmp_path):
    dataset, session = voted
    pair = session.pairs.order_by("pk").first()
    other = Answer.objects.create(
        query=pair.query, system=pair.answer_b.system, run_label=pair.answer_b.run_label,
        sample=1, text="A second sample.",
    )  # fmt: skip
    files = members(b"".join(export_chunks(dataset, ExportOptions.parse(None, ["jsonl"]))))
    votes = [json.loads(line) for line in files["pairwise_votes.jsonl"].decode().splitlines()]
    (line, vote), *_ = [(n, v) for n, v in enumerate(votes, 1)
                        if v["query"] == pair.query.external_id]  # fmt: skip
    vote["answer_b_sample"], vote["rater"] = other.sample, "newcomer"
    files["pairwise_votes.jsonl"] = "".join(json.dumps(v) + "\n" for v in votes).encode()
    with pytest.raises(ImportRejected) as refused:
        import_dataset(write_zip(tmp_path / "x.zip", files), ImportOptions(dataset=dataset))
    assert refused.value.errors == [
        f"pairwise_votes.jsonl:{line}: field 'query': the pair of session 'Blind one' and query "
        f"{pair.query.external_id!r} has other answers (in the dataset or an earlier line)"
    ]
