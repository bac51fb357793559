"""Answers from agents: turns with tool calls, retrieved context and metadata, written by
`POST /api/answers/`, the answers upload (JSONL and CSV with JSON-encoded columns) and the
dataset import, exported and imported back identical; bad values name the field and the
row and change nothing."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evaluation.answers import agent_fields
from evaluation.answers.models import Answer
from evaluation.checks.trajectory import trajectory_of
from evaluation.datasets.export import export_chunks
from evaluation.datasets.importer import ImportOptions, import_dataset
from evaluation.tables.rows import ImportRejected
from tests.evaluation.data.imports import empty_the_database
from tests.evaluation.data.zips import members, write_zip

pytestmark = pytest.mark.django_db

TURNS = [
    {"role": "user", "content": "How did Solavex's Q3 revenue compare with guidance?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c1", "name": "search_filings", "arguments": {"ticker": "SLVX", "form": "10-Q"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "name": "search_filings", "content": "Q3 10-Q: $4.12B"},
    {"role": "assistant", "content": "Revenue was $4.12 billion, above guidance."},
]
CONTEXT = [
    {"id": "doc-1", "title": "Q3 10-Q", "source": "SEC", "text": "Revenue: $4.12 billion."},
    {"id": "doc-2", "title": "Guidance", "source": "Release", "text": "Guided $4.0 billion."},
]
METADATA = {"model": "agent-1", "latency_ms": 5230, "cost": 0.0123, "steps": ["plan", "search"]}


def agent_row(query, **extra) -> dict:
    return {
        "query": query.pk, "system": "Agent", "text": "Revenue was $4.12 billion.",
        "turns": TURNS, "context": CONTEXT, "metadata": METADATA, **extra,
    }  # fmt: skip


def test_post_an_agent_answer_and_read_it_back(owner_api, query):
    openai_shaped = [
        TURNS[0],
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {
                        "name": "search_filings",
                        "arguments": json.dumps({"ticker": "SLVX", "form": "10-Q"}),
                    },
                }
            ],
        },
        *TURNS[2:],
    ]
    response = owner_api.post("/api/answers/", agent_row(query, turns=openai_shaped), format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    # OpenAI's shape is stored as the documented one: the same value as TURNS.
    assert body["turns"] == TURNS and body["context"] == CONTEXT and body["metadata"] == METADATA
    assert owner_api.get(f"/api/answers/{body['id']}/").json()["turns"] == TURNS
    again = owner_api.post("/api/answers/", agent_row(query, text="New."), format="json")
    assert again.status_code == 200 and again.json()["id"] == body["id"]
    assert Answer.objects.get().text == "New."


def test_a_turn_with_null_tool_calls_is_stored_as_a_turn_without_tool_calls(owner_api, query):
    """As OpenAI writes an assistant message that calls no tool (docs/data-formats.md):
    `"tool_calls": null` or `[]` and `"content": null` are stored as no tool calls and empty
    text, and the checks see no call."""
    turns = [
        TURNS[0],
        {"role": "assistant", "content": None, "tool_calls": None},
        {"role": "assistant", "content": "Revenue was $4.12 billion.", "tool_calls": []},
    ]
    response = owner_api.post("/api/answers/", agent_row(query, turns=turns), format="json")
    assert response.status_code == 201, response.content
    assert response.json()["turns"] == [
        TURNS[0], {"role": "assistant", "content": ""},
        {"role": "assistant", "content": "Revenue was $4.12 billion."},
    ]  # fmt: skip
    stored = Answer.objects.get()
    assert trajectory_of(stored.text, stored.turns, stored.metadata).calls == ()


def test_a_bad_field_is_named_and_nothing_is_written(owner_api, query):
    bad = [*TURNS, {"role": "robot", "content": "hi"}]
    response = owner_api.post("/api/answers/", agent_row(query, turns=bad), format="json")
    assert response.status_code == 400
    assert response.json()["errors"] == [
        "answer: field 'turns': turn 5: 'role' must be one of user, assistant, tool, not 'robot'"
    ]
    context = [CONTEXT[0], {"id": "doc-1", "text": "again"}]
    response = owner_api.post("/api/answers/", agent_row(query, context=context), format="json")
    assert "answer: field 'context': passage 2: 'id' 'doc-1' repeats passage 1" in str(
        response.json()
    )
    assert not Answer.objects.exists()


def test_post_needs_the_datasets_admin(collaborator_api, outsider_api, query):
    body = agent_row(query)
    assert collaborator_api.post("/api/answers/", body, format="json").status_code == 403
    assert outsider_api.post("/api/answers/", body, format="json").status_code == 404
    assert not Answer.objects.exists()


def test_sizes_past_the_bounds_are_refused_with_the_bound_named(owner_api, query):
    many = [{"role": "user", "content": "x"}] * (agent_fields.MAX_TURNS + 1)
    response = owner_api.post("/api/answers/", agent_row(query, turns=many), format="json")
    assert response.json()["errors"] == [
        f"answer: field 'turns' has {agent_fields.MAX_TURNS + 1} turns; at most "
        f"{agent_fields.MAX_TURNS} are accepted"
    ]
    big = [{"id": "d", "text": "x" * (agent_fields.MAX_CONTEXT_CHARS + 1)}]
    response = owner_api.post("/api/answers/", agent_row(query, context=big), format="json")
    assert "answer: field 'context' is 1,000,0" in response.json()["errors"][0]
    assert "at most 1,000,000 are accepted" in response.json()["errors"][0]
    assert not Answer.objects.exists()


def test_upload_jsonl_and_csv_with_json_encoded_columns(owner_api, dataset, query):
    jsonl = json.dumps(agent_row(query)).encode()
    response = owner_api.post(
        "/api/answers/import/",
        {"dataset": dataset.pk, "file": SimpleUploadedFile("a.jsonl", jsonl)},
        format="multipart",
    )
    assert response.status_code == 201, response.content
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(agent_row(query, run_label="csv")))
    writer.writeheader()
    row = agent_row(query, run_label="csv")
    writer.writerow({k: json.dumps(row[k]) if k in TURNS_KEYS else row[k] for k in row})
    response = owner_api.post(
        "/api/answers/import/",
        {"dataset": dataset.pk, "file": SimpleUploadedFile("a.csv", out.getvalue().encode())},
        format="multipart",
    )
    assert response.status_code == 201, response.content
    first, second = Answer.objects.order_by("pk")
    for answer in (first, second):
        assert (answer.turns, answer.context, answer.metadata) == (TURNS, CONTEXT, METADATA)


TURNS_KEYS = ("turns", "context", "metadata")


def test_upload_errors_name_file_line_and_field(owner_api, dataset, query):
    rows = [agent_row(query), agent_row(query, run_label="b", metadata={"cost": -1})]
    content = "\n".join(json.dumps(r) for r in rows).encode()
    response = owner_api.post(
        "/api/answers/import/",
        {"dataset": dataset.pk, "file": SimpleUploadedFile("a.jsonl", content)},
        format="multipart",
    )
    assert response.status_code == 400
    assert response.json()["file"] == [
        "a.jsonl:2: field 'metadata': 'cost' must be a number, 0 or more"
    ]
    assert not Answer.objects.exists()


def test_dataset_export_and_import_keep_the_agent_fields(owner_api, dataset, query, tmp_path):
    owner_api.post("/api/answers/", agent_row(query), format="json")
    owner_api.post("/api/answers/", agent_row(query, run_label="plain", turns=[], context=[],
                                              metadata={}), format="json")  # fmt: skip
    first = b"".join(export_chunks(dataset))
    files = members(first)
    lines = [json.loads(line) for line in files["answers.jsonl"].decode().splitlines()]
    agent = next(r for r in lines if r["run_label"] == "")
    # Nested in JSON Lines; JSON text in CSV.
    assert (agent["turns"], agent["context"], agent["metadata"]) == (TURNS, CONTEXT, METADATA)
    assert next(r for r in lines if r["run_label"] == "plain")["turns"] is None
    csv_rows = list(csv.DictReader(io.StringIO(files["answers.csv"].decode())))
    assert json.loads(next(r for r in csv_rows if r["run_label"] == "")["turns"]) == TURNS
    path = tmp_path / "first.zip"
    path.write_bytes(first)
    empty_the_database()
    result = import_dataset(path)
    stored = Answer.objects.get(run_label="")
    assert (stored.turns, stored.context, stored.metadata) == (TURNS, CONTEXT, METADATA)
    assert Answer.objects.get(run_label="plain").turns == []
    second = members(b"".join(export_chunks(result.dataset)))
    for name in ("answers.jsonl", "answers.csv"):
        assert _without_ids(name, first_files=files, second=second)
    assert not import_dataset(path, ImportOptions(dataset=result.dataset)).changed


def _without_ids(name: str, *, first_files: dict, second: dict) -> bool:
    def rows(data: bytes) -> list:
        if name.endswith(".jsonl"):
            return [{k: v for k, v in json.loads(x).items() if k != "id"}
                    for x in data.decode().splitlines()]  # fmt: skip
        return [{k: v for k, v in r.items() if k != "id"}
                for r in csv.DictReader(io.StringIO(data.decode()))]  # fmt: skip

    return rows(first_files[name]) == rows(second[name])


def test_dataset_import_refuses_a_bad_turn_naming_file_line_and_field(tmp_path, owner_api, query):
    owner_api.post("/api/answers/", agent_row(query), format="json")
    files = members(b"".join(export_chunks(query.dataset)))
    lines = [json.loads(x) for x in files["answers.jsonl"].decode().splitlines()]
    lines[0]["turns"] = json.dumps([{"role": "assistant", "tool_calls": [{"name": ""}]}])
    files["answers.jsonl"] = ("\n".join(json.dumps(x) for x in lines) + "\n").encode()
    for other in [n for n in files if n.startswith("answers.") and n != "answers.jsonl"]:
        del files[other]
    path = write_zip(tmp_path / "bad.zip", files)
    empty_the_database()
    with pytest.raises(ImportRejected) as refused:
        import_dataset(path)
    assert (
        "answers.jsonl:1: field 'turns': turn 1: tool call 1: 'name' must be the tool's name"
        in "\n".join(refused.value.errors)
    )
    assert not Answer.objects.exists()


def test_criterion_checks_export_and_import_back(owner, collaborator, query, tmp_path):
    from annotation import services
    from evaluation.checks.models import CriterionCheck
    from tests.factories import valid_criteria

    checklist = services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria(), submit=True
    )
    first, second = checklist.criteria.order_by("position")[:2]
    params = {"calls": [{"name": "search", "arguments": {"ticker": "NWS"}}], "mode": "in_order",
              "compare_arguments": True}  # fmt: skip
    CriterionCheck.objects.create(criterion=first, kind="tool_sequence", params=params,
                                  threshold=0.5)  # fmt: skip
    CriterionCheck.objects.create(criterion=second, evidence="context")
    data = b"".join(export_chunks(query.dataset))
    files = members(data)
    rows = [json.loads(x) for x in files["criterion_checks.jsonl"].decode().splitlines()]
    assert [r["kind"] for r in rows] == ["tool_sequence", ""]
    path = tmp_path / "checks.zip"
    path.write_bytes(data)
    empty_the_database()
    result = import_dataset(path)
    stored = {c.criterion.text: c for c in CriterionCheck.objects.select_related("criterion")}
    again = stored[first.text]
    assert (again.kind, again.params, again.threshold) == ("tool_sequence", params, 0.5)
    assert stored[second.text].evidence == "context" and stored[second.text].kind == ""
    assert (
        members(b"".join(export_chunks(result.dataset)))["criterion_checks.jsonl"]
        == (files["criterion_checks.jsonl"])
    )
    assert not import_dataset(path, ImportOptions(dataset=result.dataset)).changed


def test_a_bad_criterion_check_is_refused_naming_the_field(collaborator, query, tmp_path):
    from annotation import services
    from evaluation.checks.models import CriterionCheck
    from tests.factories import valid_criteria

    checklist = services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria(), submit=True
    )
    CriterionCheck.objects.create(criterion=checklist.criteria.first(), kind="tool_set",
                                  params={"tools": ["search"]})  # fmt: skip
    files = members(b"".join(export_chunks(query.dataset)))
    row = json.loads(files["criterion_checks.jsonl"])
    row["params"] = json.dumps({"tools": ["search"], "mode": "sideways"})
    files["criterion_checks.jsonl"] = (json.dumps(row) + "\n").encode()
    for other in ("criterion_checks.csv", "criterion_checks.parquet"):
        files.pop(other, None)
    path = write_zip(tmp_path / "bad.zip", files)
    empty_the_database()
    with pytest.raises(ImportRejected) as refused:
        import_dataset(path)
    assert refused.value.errors == [
        "criterion_checks.jsonl:1: field 'params': params: unknown parameter 'mode'"
    ]
    assert not CriterionCheck.objects.exists()


def test_an_older_export_with_json_text_in_jsonl_still_imports(owner_api, dataset, query, tmp_path):
    """Exports made before JSON Lines nested them wrote `turns`, `context` and `metadata`
    (and every JSON column) as JSON text: such a file imports to the same answers."""
    owner_api.post("/api/answers/", agent_row(query), format="json")
    files = members(b"".join(export_chunks(dataset)))
    rows = [json.loads(line) for line in files["answers.jsonl"].decode().splitlines()]
    for row in rows:
        for name in ("turns", "context", "metadata"):
            if row[name] is not None:
                row[name] = json.dumps(row[name])  # the older form: a string
    assert isinstance(rows[0]["turns"], str)
    files = {n: d for n, d in files.items() if not n.endswith((".csv", ".parquet"))}
    files["answers.jsonl"] = "".join(json.dumps(r) + "\n" for r in rows).encode()
    path = write_zip(tmp_path / "older.zip", files)
    empty_the_database()
    import_dataset(path)
    stored = Answer.objects.get()
    assert (stored.turns, stored.context, stored.metadata) == (TURNS, CONTEXT, METADATA)
