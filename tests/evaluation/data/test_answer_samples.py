"""Several answers of one system to one query (samples 0, 1, 2…): the upload, `POST
/api/answers/`, the review imports and the dataset export and import carry the sample
index; a bad sample names its line and field and writes nothing."""

from __future__ import annotations

import json

import pytest

from annotation.models import Criterion, Dataset
from bench.data_io.generate import generate
from evaluation.answers.models import Answer
from evaluation.answers.upload import import_answers
from evaluation.datasets.import_checks import answer_key
from evaluation.datasets.review_imports import import_labels
from evaluation.labels.models import HumanLabel
from evaluation.runs.models import Verdict
from evaluation.tables.rows import ImportRejected
from tests.evaluation.data.test_round_trip import _round_trip
from tests.factories import UserFactory
from tests.support.builders import checklisted_query

pytestmark = pytest.mark.django_db


def _jsonl(*rows: dict) -> str:
    return "\n".join(json.dumps(r) for r in rows)


def test_upload_keeps_one_answer_per_sample_and_updates_the_same_sample(query, dataset):
    rows = [
        {"query": query.pk, "system": "Agent", "text": f"try {n}", "sample": n} for n in range(3)
    ]
    result = import_answers(dataset=dataset, name="a.jsonl", content=_jsonl(*rows))
    assert (result.created, result.updated) == (3, 0)
    again = [{**rows[1], "text": "try 1, again"}]
    assert import_answers(dataset=dataset, name="b.jsonl", content=_jsonl(*again)).updated == 1
    found = dict(Answer.objects.values_list("sample", "text"))
    assert found == {0: "try 0", 1: "try 1, again", 2: "try 2"}
    # A CSV cell carries the digits; an empty cell is sample 0.
    csv = f"query,system,text,sample\r\n{query.pk},Other,x,\r\n{query.pk},Other,y,1\r\n"
    assert import_answers(dataset=dataset, name="c.csv", content=csv).created == 2
    assert sorted(Answer.objects.filter(system__name="Other").values_list("sample", "text")) == [
        (0, "x"), (1, "y"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    "sample, message",
    [
        (-1, "field 'sample' must be a whole number from 0 to 99, not -1"),
        (100, "field 'sample' must be a whole number from 0 to 99, not 100"),
        ("two", "field 'sample' must be a whole number from 0 to 99, not 'two'"),
        (1.5, "field 'sample' must be a whole number from 0 to 99, not 1.5"),
        (True, "field 'sample' must be a whole number from 0 to 99, not True"),
    ],
)
def test_a_bad_sample_names_line_and_field_and_writes_nothing(query, dataset, sample, message):
    rows = [
        {"query": query.pk, "system": "Agent", "text": "fine"},
        {"query": query.pk, "system": "Agent", "text": "bad", "sample": sample},
    ]
    with pytest.raises(ImportRejected) as rejected:
        import_answers(dataset=dataset, name="a.jsonl", content=_jsonl(*rows))
    assert rejected.value.errors == [f"a.jsonl:2: {message}"]
    assert not Answer.objects.exists()


def test_the_same_sample_twice_in_a_file_is_refused(query, dataset):
    row = {"query": query.pk, "system": "Agent", "text": "x", "sample": 1}
    with pytest.raises(ImportRejected) as rejected:
        import_answers(dataset=dataset, name="a.jsonl", content=_jsonl(row, row))
    assert "same system, query, run label and sample as line 1" in rejected.value.errors[0]
    assert not Answer.objects.exists()


def test_post_answers_takes_a_sample_and_filters_by_it(owner_api, collaborator_api, query):
    body = {"query": query.pk, "system": "Agent", "text": "first"}
    assert owner_api.post("/api/answers/", body, format="json").json()["sample"] == 0
    second = owner_api.post("/api/answers/", {**body, "sample": 1}, format="json")
    assert second.status_code == 201 and second.json()["sample"] == 1
    replaced = owner_api.post(
        "/api/answers/", {**body, "text": "again", "sample": 1}, format="json"
    )
    assert replaced.status_code == 200
    assert Answer.objects.count() == 2
    bad = owner_api.post("/api/answers/", {**body, "sample": "x"}, format="json")
    assert bad.status_code == 400
    assert bad.json()["errors"] == [
        "answer: field 'sample' must be a whole number from 0 to 99, not 'x'"
    ]
    assert Answer.objects.count() == 2
    refused = collaborator_api.post("/api/answers/", {**body, "sample": 2}, format="json")
    assert refused.status_code == 403 and Answer.objects.count() == 2
    listed = collaborator_api.get("/api/answers/", {"sample": 1}).json()["results"]
    assert [(a["sample"], a["text"]) for a in listed] == [(1, "again")]


def test_export_and_import_keep_each_samples_answer_verdicts_and_labels(tmp_path):
    dataset = generate("Samples", queries=2, systems=2, criteria=3, judges=1, samples=1)
    # A second sample of every answer, with its own verdicts and one label: the items of
    # sample 1 must come back on sample 1, not on sample 0 (same system, query, run label).
    for answer in list(Answer.objects.filter(query__dataset=dataset, checklist__isnull=True)):
        twin = Answer.objects.create(
            system=answer.system, query=answer.query, text=answer.text + " (again)", sample=1
        )
        verdicts = list(Verdict.objects.filter(answer=answer))
        for v in verdicts:
            v.pk, v.answer, v.outcome = None, twin, "fail"
        Verdict.objects.bulk_create(verdicts)
        criterion = Criterion.objects.filter(checklist__query=answer.query).first()
        HumanLabel.objects.create(answer=twin, criterion=criterion, rater="r", label="fail")
    first, second = _round_trip(dataset, tmp_path)
    answers = [json.loads(line) for line in first["answers.jsonl"].decode().splitlines()]
    assert sorted({a["sample"] for a in answers}) == [0, 1]
    verdicts = [json.loads(line) for line in first["verdicts.jsonl"].decode().splitlines()]
    assert {v["answer_sample"] for v in verdicts if v["outcome"] == "fail"} >= {1}
    assert first["verdicts.jsonl"] == second["verdicts.jsonl"]
    assert first["labels.jsonl"] == second["labels.jsonl"]
    imported = Dataset.objects.get(name="Samples")
    for twin in Answer.objects.filter(query__dataset=imported, sample=1):
        assert twin.text.endswith("(again)")
        assert set(Verdict.objects.filter(answer=twin).values_list("outcome", flat=True)) == {
            "fail"
        }
        assert HumanLabel.objects.filter(answer=twin, label="fail").exists()


def test_an_item_row_without_answer_sample_names_sample_0():
    """Files written before answers had samples have no `sample` nor `answer_sample` cell
    (read as None): their answers and items are sample 0."""
    row = {"system": "S", "system_version": "", "query": "q-1", "run_label": "", "sample": None}
    assert answer_key(row) == ("S", "", "q-1", "", 0)
    item = {**row, "answer_sample": None}
    del item["sample"]
    assert answer_key(item) == ("S", "", "q-1", "", 0)
    assert answer_key({**item, "answer_sample": 2})[4] == 2


def test_labels_import_names_an_answer_by_its_sample(query, dataset):
    checklisted_query(query=query, author=UserFactory(username="x"), criteria=1)
    criterion = Criterion.objects.get(checklist__query=query)
    rows = [{"query": query.pk, "system": "Agent", "text": str(n), "sample": n} for n in (0, 1)]
    import_answers(dataset=dataset, name="a.jsonl", content=_jsonl(*rows))
    header = "system,query,sample,criterion,rater,label\n"
    content = (
        header
        + f"Agent,{query.pk},1,{criterion.pk},r,fail\nAgent,{query.pk},,{criterion.pk},r,pass\n"
    )
    assert import_labels(dataset=dataset, name="l.csv", content=content).created == 2
    assert dict(HumanLabel.objects.values_list("answer__sample", "label")) == {1: "fail", 0: "pass"}
    bad = header + f"Agent,{query.pk},7,{criterion.pk},r,fail\n"
    with pytest.raises(ImportRejected) as rejected:
        import_labels(dataset=dataset, name="l.csv", content=bad)
    assert "l.csv:2: field 'query': no answer of system 'Agent'" in rejected.value.errors[0]
    assert "and sample 7" in rejected.value.errors[0]
    assert HumanLabel.objects.count() == 2
