"""Importing system answers from JSONL or CSV: every row is checked before anything is
written, then all rows are written in one transaction, or none.

Row fields: `query` (the query's id in the app) or `query_external_id` (its external id, as
the dataset's export and the reward API name it; one of the two), `system` (name), `system_version`
(optional), `text` (the answer, markdown), `external_id`, `run_label` and `sample` (optional;
the sample index, 0 by default, of one of several answers of a system to a query), and
for an agent's answer `turns`, `context` and `metadata` (optional; JSON values in JSONL,
JSON text in a CSV cell; evaluation.answers.agent_fields checks them).
Importing the same file again updates the same answers: an answer is identified by its
system, query, run label and sample.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from annotation.models import Dataset, Query
from annotation.services import external_ids_fix
from config import limits
from config.ids import is_id
from evaluation.answers import agent_fields
from evaluation.answers.models import Answer, System
from evaluation.tables import formats
from evaluation.tables.rows import Checked, ImportRejected, check_rows, field_text

REQUIRED = ("system", "text")
OPTIONAL = (
    "query", "query_external_id", "system_version", "external_id", "run_label", "sample",
    *agent_fields.FIELDS,
)  # fmt: skip
# The most samples of one system's answers to one query (indexes 0..MAX_SAMPLE): pass^k is
# read over k answers, and a k past a hundred is a bulk load, not a reliability measure.
MAX_SAMPLE = 99
LIMITS = {
    "system": 200,
    "system_version": 100,
    "external_id": limits.EXTERNAL_ID,
    "run_label": 100,
    "text": limits.ANSWER_TEXT,
}


@dataclass(frozen=True)
class AnswerRow:
    line: int
    query_id: int
    system: str
    system_version: str
    text: str
    external_id: str
    run_label: str
    by_external_id: bool = False  # the row named its query by external id
    sample: int = 0
    turns: list = field(default_factory=list)
    context: list = field(default_factory=list)
    metadata: dict = field(default_factory=dict)

    @property
    def fields(self) -> dict:
        """What an answer row writes besides its identity."""
        return {
            "text": self.text, "external_id": self.external_id, "turns": self.turns,
            "context": self.context, "metadata": self.metadata,
        }  # fmt: skip


@dataclass(frozen=True)
class ImportResult:
    created: int
    updated: int
    systems_created: int


def read_rows(name: str, content: str) -> list[tuple[int, dict]]:
    """(line number, raw row) pairs from JSONL or CSV, chosen by the file name. A byte-order
    mark (Excel's "CSV UTF-8") is dropped; a CSV row names the line it starts on, also when
    quoted newlines make it span several."""
    try:
        return list(formats.read_text_rows(name, content))
    except formats.FileRejected as exc:
        raise ImportRejected(exc.errors) from None


def decode_upload(name: str, data: bytes) -> str:
    """The text of an uploaded file: UTF-8 with or without a byte-order mark; otherwise
    ImportRejected says which encoding the file looks like."""
    try:
        return formats.decode(name, data)
    except formats.FileRejected as exc:
        raise ImportRejected(exc.errors) from None


@dataclass(frozen=True)
class DatasetQueries:
    """A dataset's queries as answer rows name them: by id in the app, or by external id."""

    dataset_id: int
    ids: set[int]
    by_external_id: dict[str, int]

    @classmethod
    def of(cls, dataset: Dataset) -> DatasetQueries:
        found = list(dataset.queries.values_list("pk", "external_id"))
        return cls(dataset.pk, {pk for pk, _ in found}, {e: pk for pk, e in found if e})


def check_answer_rows(name: str, raw: list[tuple[int, dict]], dataset: Dataset) -> list[AnswerRow]:
    """The file's rows checked (ImportRejected lists every error): one answer per system,
    query, run label and sample."""
    queries = DatasetQueries.of(dataset)
    if not raw:
        raise ImportRejected([f"{name}: no rows"])
    return check_rows(
        name,
        raw,
        lambda line, row, where: _check_answer(line, row, where, queries),
        duplicate="same system, query, run label and sample as line {line}; one answer each",
    )


def _query_of(row: dict, where: str, queries: DatasetQueries) -> tuple[int | None, list[str]]:
    """The query a row names, by `query` (the id in the app) or `query_external_id`: its id,
    or the problems (neither, both, or one naming no query of the dataset)."""
    query, external = field_text(row, "query"), field_text(row, "query_external_id")
    if query and external:
        return None, [f"{where}: give 'query' or 'query_external_id', not both"]
    if external:
        if external not in queries.by_external_id:
            return None, [
                f"{where}: field 'query_external_id': no query with external id {external!r} "
                f"in dataset {queries.dataset_id}"
            ]
        return queries.by_external_id[external], []
    if not query:
        return None, [f"{where}: field 'query' (or 'query_external_id') is required"]
    if not is_id(query):
        return None, [f"{where}: field 'query' must be a query id (a number), not {query!r}"]
    if int(query) not in queries.ids:
        return None, [f"{where}: field 'query': no query {query} in dataset {queries.dataset_id}"]
    return int(query), []


def _check_answer(
    line: int, row: dict, where: str, queries: DatasetQueries
) -> Checked[AnswerRow] | list[str]:
    problems = [f"{where}: field {f!r} is required" for f in REQUIRED if not field_text(row, f)]
    query_id, found_problems = _query_of(row, where, queries)
    problems.extend(found_problems)
    for name, limit in LIMITS.items():
        if len(field_text(row, name)) > limit:
            problems.append(f"{where}: field {name!r} is longer than {limit} characters")
    sample, problem = parse_sample(row.get("sample"))
    if problem:
        problems.append(f"{where}: field 'sample' {problem}")
    agent, found = agent_fields.check_fields(row)
    problems.extend(f"{where}: {p}" for p in found)
    if problems or query_id is None:
        return problems
    answer = AnswerRow(
        line=line,
        query_id=query_id,
        system=field_text(row, "system"),
        system_version=field_text(row, "system_version"),
        text=str(row["text"]),
        external_id=field_text(row, "external_id"),
        run_label=field_text(row, "run_label"),
        by_external_id=bool(field_text(row, "query_external_id")),
        sample=sample,
        **agent,
    )
    return Checked(
        answer,
        (answer.system, answer.system_version, answer.query_id, answer.run_label, answer.sample),
    )


def _fix_named(dataset: Dataset, rows: list[AnswerRow]) -> None:
    """The external ids the rows named queries by are held outside the app from now on (a
    system's answers file, a script): they may no longer change."""
    named = {row.query_id for row in rows if row.by_external_id}
    if named:
        external_ids_fix(queries=Query.objects.filter(pk__in=named, dataset=dataset), by="answers")


def parse_sample(value: object) -> tuple[int, str]:
    """(sample index, problem): an absent or empty sample is 0; otherwise a whole number
    from 0 to MAX_SAMPLE, given as a number (JSON) or as its digits (a CSV cell)."""
    if value is None or value == "":
        return 0, ""
    if isinstance(value, bool):
        return 0, f"must be a whole number from 0 to {MAX_SAMPLE}, not {value!r}"
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
    else:
        return 0, f"must be a whole number from 0 to {MAX_SAMPLE}, not {value!r}"
    if not 0 <= number <= MAX_SAMPLE:
        return 0, f"must be a whole number from 0 to {MAX_SAMPLE}, not {number}"
    return number, ""


@transaction.atomic
def save_answer(*, dataset: Dataset, row: dict) -> tuple[Answer, bool]:
    """One answer posted to the API (`POST /api/answers/`), checked as an imported row is;
    ImportRejected names each bad field and writes nothing. Returns (answer, created)."""
    if not isinstance(row, dict):
        raise ImportRejected(["answer: the body must be a JSON object"])
    checked = _check_answer(1, row, "answer", DatasetQueries.of(dataset))
    if not isinstance(checked, Checked):
        raise ImportRejected(checked)
    value: AnswerRow = checked.value
    _fix_named(dataset, [value])
    system, _ = System.objects.get_or_create(name=value.system, version=value.system_version)
    return Answer.objects.update_or_create(
        system=system,
        query_id=value.query_id,
        run_label=value.run_label,
        sample=value.sample,
        defaults=value.fields,
    )


@transaction.atomic
def import_answers(*, dataset: Dataset, name: str, content: str) -> ImportResult:
    """Check every row, then write them all (or raise ImportRejected and write nothing)."""
    rows = check_answer_rows(name, read_rows(name, content), dataset)
    _fix_named(dataset, rows)
    systems: dict[tuple[str, str], System] = {}
    systems_created = created = updated = 0
    for row in rows:
        key = (row.system, row.system_version)
        if key not in systems:
            systems[key], made = System.objects.get_or_create(
                name=row.system, version=row.system_version
            )
            systems_created += made
        _, made = Answer.objects.update_or_create(
            system=systems[key],
            query_id=row.query_id,
            run_label=row.run_label,
            sample=row.sample,
            defaults=row.fields,
        )
        created += made
        updated += not made
    return ImportResult(created=created, updated=updated, systems_created=systems_created)


def import_answers_file(*, dataset: Dataset, path: Path) -> ImportResult:
    try:
        content = decode_upload(path.name, path.read_bytes())
    except OSError as exc:
        raise ImportRejected([f"{path.name}: cannot be read ({exc})"]) from exc
    return import_answers(dataset=dataset, name=path.name, content=content)
