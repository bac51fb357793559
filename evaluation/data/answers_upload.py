"""Importing system answers from JSONL or CSV: every row is checked before anything is
written, then all rows are written in one transaction, or none.

Row fields: `query` (the query's id in the dataset), `system` (name), `system_version`
(optional), `text` (the answer, markdown), `external_id` and `run_label` (optional).
Importing the same file again updates the same answers: an answer is identified by its
system, query and run label.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from annotation.models import Dataset
from config import limits
from config.ids import is_id
from evaluation.data import formats
from evaluation.models import Answer, System

REQUIRED = ("query", "system", "text")
OPTIONAL = ("system_version", "external_id", "run_label")
LIMITS = {
    "system": 200,
    "system_version": 100,
    "external_id": limits.EXTERNAL_ID,
    "run_label": 100,
    "text": limits.ANSWER_TEXT,
}
MESSAGE_CHARS = 500  # one error line; a row's own text is never echoed at length


class ImportRejected(Exception):
    """The file has errors; nothing was written. `errors` lists each one."""

    def __init__(self, errors: list[str]) -> None:
        # Bounded: a file of a million bad rows must not make a response of a million lines.
        listed = limits.ERRORS_LISTED
        self.count = len(errors)
        self.errors = [_short(e) for e in errors[:listed]]
        if len(errors) > listed:
            self.errors.append(f"… and {len(errors) - listed} more error(s) of the same file")
        shown = "\n".join(self.errors)
        super().__init__(f"{len(errors)} error(s); nothing was imported:\n{shown}")


def _short(message: str) -> str:
    return message if len(message) <= MESSAGE_CHARS else message[: MESSAGE_CHARS - 1] + "…"


@dataclass(frozen=True)
class AnswerRow:
    line: int
    query_id: int
    system: str
    system_version: str
    text: str
    external_id: str
    run_label: str


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


def check_rows(name: str, raw: list[tuple[int, dict]], dataset: Dataset) -> list[AnswerRow]:
    errors: list[str] = []
    rows: list[AnswerRow] = []
    query_ids = set(dataset.queries.values_list("pk", flat=True))
    seen: dict[tuple[str, str, int, str], int] = {}
    if not raw:
        raise ImportRejected([f"{name}: no rows"])
    for line, row in raw:
        where = f"{name}:{line}"
        if row.get("__not_an_object__"):
            errors.append(f"{where}: each line must be a JSON object")
            continue
        problems = [f"{where}: field {f!r} is required" for f in REQUIRED if not _text(row, f)]
        query = _text(row, "query")
        if query and not is_id(query):
            problems.append(f"{where}: field 'query' must be a query id (a number), not {query!r}")
        elif query and int(query) not in query_ids:
            problems.append(f"{where}: field 'query': no query {query} in dataset {dataset.pk}")
        for field, limit in LIMITS.items():
            if len(_text(row, field)) > limit:
                problems.append(f"{where}: field {field!r} is longer than {limit} characters")
        if problems:
            errors.extend(problems)
            continue
        answer = AnswerRow(
            line=line,
            query_id=int(query),
            system=_text(row, "system"),
            system_version=_text(row, "system_version"),
            text=str(row["text"]),
            external_id=_text(row, "external_id"),
            run_label=_text(row, "run_label"),
        )
        key = (answer.system, answer.system_version, answer.query_id, answer.run_label)
        if key in seen:
            errors.append(
                f"{where}: same system, query and run label as line {seen[key]}; one answer each"
            )
            continue
        seen[key] = line
        rows.append(answer)
    if errors:
        raise ImportRejected(errors)
    return rows


def _text(row: dict, field: str) -> str:
    value = row.get(field)
    return "" if value is None else str(value).strip()


@transaction.atomic
def import_answers(*, dataset: Dataset, name: str, content: str) -> ImportResult:
    """Check every row, then write them all (or raise ImportRejected and write nothing)."""
    rows = check_rows(name, read_rows(name, content), dataset)
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
            defaults={"text": row.text, "external_id": row.external_id},
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
