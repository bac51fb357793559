"""Importing a dataset from the export layout (a zip or a folder of table files): creates or
updates the dataset, its queries, checklists, criteria, citations, perfect answers, answers,
runs, verdicts, labels and adjudications, matched by external keys. See
docs/data-formats.md#dataset-import.

Two phases. First every file is read and every row checked, against what the files define
and what the database already holds, and nothing is written: any error rejects the import
with every error listed as `file:line: field 'name': problem`. Then everything is written in
one transaction (structure through the ORM; answers, verdicts, labels and adjudications
through bulk upserts, evaluation.data.bulk), so a row that still fails there (a duplicate)
rolls it all back. Importing the same files again changes nothing: every row is matched by
its key and rewritten only when it differs. An import never deletes anything.

Imports of the same dataset are serialised (an advisory lock on PostgreSQL, the database
lock on SQLite), so two at once give the result of one after the other.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from annotation import guidelines as guideline_rules
from annotation import roles
from annotation.models import (
    Checklist,
    ChecklistEvent,
    Citation,
    Criterion,
    Dataset,
    DomainTag,
    Guideline,
    Query,
    QueryCategory,
    SourceType,
)
from annotation.services import dataset_set_role
from annotation.services.datasets import DATASET_SETTINGS
from annotation.validation import (
    ChecklistInput,
    CitationInput,
    CriterionInput,
    GuidelineConfig,
    validate_checklist,
)
from evaluation.cross_evaluation.services import REFERENCE_SYSTEM, reference_system
from evaluation.cross_evaluation.services import run_label as perfect_run_label
from evaluation.data import bulk, schema
from evaluation.data.export import criterion_key, perfect_label, query_key
from evaluation.data.formats import FileRejected, cell
from evaluation.data.rows import ImportRejected  # one refusal for every import
from evaluation.data.source import Source
from evaluation.kept.events import Event, bump
from evaluation.models import (
    Adjudication,
    Answer,
    GradedScore,
    HumanLabel,
    Judge,
    JudgeCall,
    Label,
    Panel,
    PanelMember,
    Run,
    System,
    Verdict,
)
from evaluation.runs import snapshot

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

logger = logging.getLogger(__name__)

MAX_ERRORS = 200
EVENT_BATCH = 100  # checklists whose history entries are made at a time
ON_GUIDELINE_ERRORS = ("warn", "refuse")
schema_kinds = frozenset(Criterion.Kind.values)
AnswerKey = tuple[str, str, str, str]  # system, version, query, run label
CriterionKey = tuple[str, str, str]  # query, author, criterion


@dataclass(frozen=True)
class ImportOptions:
    dataset: Dataset | None = None  # import into this dataset (default: by dataset.json's name)
    guideline: Guideline | None = None  # the dataset's guideline (default: the file's)
    on_guideline_errors: str = "warn"  # or "refuse"
    by: AbstractBaseUser | None = None  # who imports (None: the command line)


@dataclass
class ImportResult:
    dataset: Dataset
    dataset_created: bool = False
    created: dict[str, int] = field(default_factory=dict)
    updated: dict[str, int] = field(default_factory=dict)
    unchanged: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def count(self, table: str, created: int = 0, updated: int = 0, unchanged: int = 0) -> None:
        for store, n in ((self.created, created), (self.updated, updated),
                         (self.unchanged, unchanged)):  # fmt: skip
            store[table] = store.get(table, 0) + n

    @property
    def rows(self) -> list[tuple[str, int, int, int]]:
        """(table, new, changed, unchanged) for every table the import touched."""
        tables = sorted(set(self.created) | set(self.updated) | set(self.unchanged))
        return [
            (t, self.created.get(t, 0), self.updated.get(t, 0), self.unchanged.get(t, 0))
            for t in tables
        ]

    @property
    def changed(self) -> bool:
        return self.dataset_created or any(self.created.values()) or any(self.updated.values())


# --- reading and checking rows ---------------------------------------------------------

REQUIRED = {
    "guidelines": ("name", "version", "config"),
    "source_types": ("slug", "name"),
    "members": ("username", "role"),
    "queries": ("external_id", "text", "query_date"),
    "checklists": ("query", "author", "status"),
    "criteria": ("query", "author", "external_id", "text", "kind"),
    "citations": ("query", "author", "criterion", "title"),
    "perfect_answers": ("query", "author", "text"),
    "systems": ("name",),
    "answers": ("system", "query", "text"),
    "judges": ("name", "kind"),
    "panels": ("name", "method"),
    "runs": ("run", "kind", "panel"),
    "verdicts": ("run", "system", "query", "author", "criterion", "judge", "outcome"),
    "grades": ("run", "system", "query", "judge", "outcome"),
    "labels": ("system", "query", "author", "criterion", "rater", "label"),
    "adjudications": ("system", "query", "author", "criterion", "label"),
}
CHOICES = {
    ("members", "role"): tuple(r.value for r in roles.DatasetRole),
    ("queries", "status"): tuple(Query.Status.values),
    ("queries", "complexity"): tuple(Query.Complexity.values),
    ("checklists", "status"): tuple(Checklist.Status.values),
    ("criteria", "kind"): tuple(Criterion.Kind.values),
    ("judges", "kind"): tuple(Judge.Kind.values),
    ("panels", "method"): tuple(Panel.Method.values),
    ("runs", "kind"): tuple(Run.Kind.values),
    ("runs", "status"): tuple(Run.Status.values),
    ("verdicts", "outcome"): tuple(Verdict.Outcome.values),
    ("verdicts", "failure_kind"): ("", *Verdict.FailureKind.values),
    ("grades", "outcome"): tuple(GradedScore.Outcome.values),
    ("labels", "label"): tuple(Label.values),
    ("labels", "source"): tuple(HumanLabel.Source.values),
    ("adjudications", "label"): tuple(Label.values),
}
LIMITS = {
    "external_id": 200, "system": 200, "name": 200, "system_version": 100, "version": 100,
    "run_label": 100, "rater": 150, "author": 150, "username": 150, "judge": 100,
    "title": 300, "url": 500, "slug": 100, "panel": 100, "run": 200, "category": 100,
    "previous_version": 200,
}  # fmt: skip
DATES = {"query_date", "published_on"}
DATETIMES = {
    "first_submitted_at", "submitted_at", "created_at", "updated_at", "decided_at", "finished_at",
    "archived_at",
}  # fmt: skip
# Tables read whole into memory (the structure: thousands of rows); the others are streamed.
SMALL = (
    "guidelines", "source_types", "members", "queries", "checklists", "criteria", "citations",
    "perfect_answers", "systems", "judges", "panels", "runs",
)  # fmt: skip
BIG = ("answers", "verdicts", "grades", "labels", "adjudications")
# The largest tables are read once: checked row by row while they are written, inside the
# import's transaction, which any error rolls back (nothing is committed, as with errors
# found before writing). Reading a million verdicts twice cost a quarter of the import.
CHECKED_WHILE_WRITING = ("verdicts",)


class _Errors(list):
    def add(self, message: str) -> None:
        if len(self) < MAX_ERRORS:
            self.append(message)
        elif len(self) == MAX_ERRORS:
            self.append("… more errors not shown; fix these first")


def _rows(source: Source, table: str, errors: _Errors) -> Iterator[tuple[str, int, dict]]:
    """(where, line, row) with cells typed and checked; rows with errors are reported and
    skipped."""
    spec = schema.TABLE[table]
    name = source.table_file(table)
    if name is None:
        return
    from_csv = name.endswith(".csv")
    required = REQUIRED.get(table, ())
    choices = [(c, allowed) for (t, c), allowed in CHOICES.items() if t == table]
    limits = [(c, limit) for c, limit in LIMITS.items() if c in spec.names]
    dates = [c for c in (*DATES, *DATETIMES) if c in spec.names]
    columns = [(c.name, c.type) for c in spec.columns]
    fast = {schema.STR: str, schema.INT: int, schema.FLOAT: float, schema.BOOL: bool}
    try:
        for line, raw in source.rows(table):
            where = f"{name}:{line}"
            if raw.get("__not_an_object__"):
                errors.add(f"{where}: each line must be a JSON object")
                continue
            row: dict[str, Any] = {}
            bad = False
            for column, kind in columns:
                value = raw.get(column)
                # JSON and Parquet cells that already have their column's type need no
                # conversion; skipping cell() for them halves the cost of a million rows.
                if not from_csv and type(value) is fast.get(kind):
                    row[column] = value
                    continue
                try:
                    value = cell(spec, column, value, from_csv=from_csv)
                except ValueError as exc:
                    errors.add(f"{where}: field {column!r}: {exc}")
                    bad = True
                    continue
                if kind == schema.STR:
                    value = "" if value is None else value
                row[column] = value
            for column in required:
                if row.get(column) in (None, ""):
                    errors.add(f"{where}: field {column!r} is required")
                    bad = True
            for column, allowed in choices:
                if row.get(column) not in (None, "") and row[column] not in allowed:
                    errors.add(f"{where}: field {column!r} must be one of {', '.join(allowed)}")
                    bad = True
            for column, limit in limits:
                value = row.get(column)
                if isinstance(value, str) and len(value) > limit:
                    errors.add(f"{where}: field {column!r} is longer than {limit} characters")
                    bad = True
            for column in dates:
                value = row.get(column)
                if value in (None, ""):
                    row[column] = None
                    continue
                parsed = _moment(column, value) if isinstance(value, str) else None
                if parsed is None:
                    kind = "a date (YYYY-MM-DD)" if column in DATES else "an ISO 8601 date and time"
                    errors.add(f"{where}: field {column!r} must be {kind}, not {value!r}")
                    bad = True
                    continue
                if column in DATETIMES and timezone.is_naive(parsed):
                    parsed = timezone.make_aware(parsed, dt.UTC)
                row[column] = parsed
            if not bad:
                yield where, line, row
    except FileRejected as exc:
        for message in exc.errors:
            errors.add(message)
    except (OSError, ValueError) as exc:  # a damaged zip member
        errors.add(f"{name}: cannot be read ({exc})")


def _moment(column: str, value: str) -> dt.date | dt.datetime | None:
    """A date or a date and time from ISO 8601 text, None when it is neither. The C parser
    first (a million timestamps: 1 s instead of 6), Django's for what it does not take."""
    if column in DATES:
        return parse_date(value)
    if len(value) > 10 and value[10] in "T ":
        try:
            return dt.datetime.fromisoformat(value)
        except ValueError:
            pass
    return parse_datetime(value)


@dataclass
class _Plan:
    """What the files say, checked; small tables in memory, big ones counted."""

    meta: dict
    tables: dict[str, list[tuple[str, dict]]] = field(default_factory=dict)
    big: dict[str, int] = field(default_factory=dict)
    usernames: set[str] = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)
    known: _Known | None = None
    guideline: Guideline | None = None
    guideline_from_file: tuple[str, int] | None = None


class _Known:
    """Keys the import may refer to: those in the files and those already stored."""

    def __init__(self, dataset: Dataset | None) -> None:
        self.queries: set[str] = set()
        self.checklists: set[tuple[str, str]] = set()
        self.criteria: set[CriterionKey] = set()
        self.answers: set[AnswerKey] = set()
        self.runs: set[str] = set()
        self.judges: set[str] = set(Judge.objects.values_list("name", flat=True))
        self.slugs: set[str] = set(SourceType.objects.values_list("slug", flat=True))
        if dataset is None:
            return
        stored = _StoredKeys(dataset)
        self.queries |= set(stored.queries)
        self.checklists |= set(stored.checklists)
        self.criteria |= set(stored.criteria)
        self.answers |= set(stored.answers)
        self.runs |= set(stored.runs)


class _StoredKeys:
    """The dataset's stored objects by external key (derived keys for those without one)."""

    def __init__(self, dataset: Dataset) -> None:
        users = dict(get_user_model().objects.values_list("pk", "username"))
        by_id: dict[int, str] = {}
        self.queries: dict[str, int] = {}
        for pk, external_id in Query.objects.filter(dataset=dataset).values_list(
            "pk", "external_id"
        ):
            by_id[pk] = query_key(pk, external_id)
            self.queries[by_id[pk]] = pk
        self.checklists: dict[tuple[str, str], int] = {}
        checklist_keys: dict[int, tuple[str, str]] = {}
        for pk, query_id, author_id in Checklist.objects.filter(query__dataset=dataset).values_list(
            "pk", "query_id", "author_id"
        ):
            checklist_keys[pk] = (by_id[query_id], users[author_id])
            self.checklists[checklist_keys[pk]] = pk
        self.criteria: dict[CriterionKey, int] = {}
        for pk, checklist_id, external_id in Criterion.objects.filter(
            checklist__query__dataset=dataset
        ).values_list("pk", "checklist_id", "external_id"):
            self.criteria[(*checklist_keys[checklist_id], criterion_key(pk, external_id))] = pk
        self.answers: dict[AnswerKey, int] = {}
        for pk, query_id, system, version, run_label, checklist_id in Answer.objects.filter(
            query__dataset=dataset
        ).values_list("pk", "query_id", "system__name", "system__version", "run_label",
                      "checklist_id"):  # fmt: skip
            if checklist_id is not None:
                run_label = perfect_label(checklist_keys[checklist_id][1])
            self.answers[(system, version, by_id[query_id], run_label)] = pk
        runs = list(
            Run.objects.filter(dataset=dataset)
            .order_by("created_at", "pk")
            .values_list("pk", "name")
        )
        names = [name for _, name in runs]
        self.runs: dict[str, int] = {
            (name if name and names.count(name) == 1 else f"run-{pk}"): pk for pk, name in runs
        }


def _target(meta: dict | None, options: ImportOptions, errors: _Errors) -> Dataset | None:
    if options.dataset is not None:
        return options.dataset
    if not meta or not str(meta.get("name") or "").strip():
        errors.add("dataset.json: field 'name' is required (or choose the dataset to import into)")
        return None
    return Dataset.objects.filter(name=str(meta["name"]).strip()).first()


# The dataset settings dataset.json carries as plain values: the name picks the dataset,
# and the guideline, an object (name and version), is read apart.
SETTINGS = tuple(f for f in DATASET_SETTINGS if f not in ("name", "guideline"))


def _check_settings(meta: dict, errors: _Errors) -> None:
    from django.core.exceptions import ValidationError

    values = {k: meta[k] for k in SETTINGS if k in meta}
    try:
        Dataset(name=str(meta.get("name") or "x"), **values).clean_fields(
            exclude=["created_by", "guideline"]
        )
    except ValidationError as exc:
        for name, messages in exc.message_dict.items():
            errors.add(f"dataset.json: field {name!r}: {' '.join(messages)}")
    except (TypeError, ValueError) as exc:
        errors.add(f"dataset.json: {exc}")


def check(source: Source, options: ImportOptions) -> tuple[_Plan, Dataset | None]:
    """Read and check every file; ImportRejected lists every error. Writes nothing."""
    errors = _Errors()
    try:
        meta = source.dataset_json() or {}
    except FileRejected as exc:
        raise ImportRejected(exc.errors) from None
    version = meta.get("schema_version", schema.SCHEMA_VERSION)
    if not isinstance(version, int) or version > schema.SCHEMA_VERSION:
        raise ImportRejected(
            [f"dataset.json: field 'schema_version': {version!r} is newer than this "
             f"installation reads ({schema.SCHEMA_VERSION}); upgrade it first"]
        )  # fmt: skip
    if options.on_guideline_errors not in ON_GUIDELINE_ERRORS:
        raise ValueError("on_guideline_errors: warn or refuse")
    if not any(source.table_file(t) for t in schema.TABLE) and not meta:
        raise ImportRejected(
            [f"{source.path.name}: no dataset.json and no table file (queries.jsonl, "
             "criteria.csv, …) found"]
        )  # fmt: skip
    dataset = _target(meta, options, errors)
    _check_settings(meta, errors)
    plan = _Plan(meta=meta)
    known = _Known(dataset)
    for table in SMALL:
        plan.tables[table] = [(where, row) for where, _, row in _rows(source, table, errors)]
    _check_structure(plan, known, dataset, options, errors)
    plan.known = known
    for table in BIG:
        if table in CHECKED_WHILE_WRITING:
            plan.big[table] = int(source.table_file(table) is not None)  # counted when written
            continue
        plan.big[table] = _check_big(source, table, plan, known, errors)
    if errors:
        raise ImportRejected(list(errors))
    return plan, dataset


def _check_structure(
    plan: _Plan, known: _Known, dataset: Dataset | None, options: ImportOptions, errors: _Errors
) -> None:
    t = plan.tables
    # Guidelines: a stored version with the same name and number must hold the same rules.
    stored = {(g.name, g.version): g for g in Guideline.objects.all()}
    file_guidelines: set[tuple[str, int]] = set()
    for where, row in t["guidelines"]:
        key = (row["name"], row["version"])
        try:
            GuidelineConfig.from_dict(row["config"])
        except (ValueError, TypeError) as exc:
            errors.add(f"{where}: field 'config': {exc}")
            continue
        if key in stored and stored[key].config != row["config"]:
            errors.add(
                f"{where}: field 'config': guideline {key[0]} v{key[1]} exists here with other "
                "rules; give this version another number"
            )
        file_guidelines.add(key)
    guideline_keys = file_guidelines | set(stored)
    chosen = plan.meta.get("guideline")
    if options.guideline is not None:
        plan.guideline = options.guideline
    elif isinstance(chosen, dict) and chosen.get("name"):
        key = (str(chosen["name"]), int(chosen.get("version") or 1))
        if key not in guideline_keys:
            errors.add(f"dataset.json: field 'guideline': no guideline {key[0]} v{key[1]}")
        elif key in stored:
            plan.guideline = stored[key]
        else:
            plan.guideline_from_file = key
    # Source types: new slugs are created; a new slug may not take an existing name.
    names = dict(SourceType.objects.values_list("name", "slug"))
    for where, row in t["source_types"]:
        if row["slug"] not in known.slugs and names.get(row["name"], row["slug"]) != row["slug"]:
            errors.add(
                f"{where}: field 'name': source type {row['name']!r} exists here with slug "
                f"{names[row['name']]!r}"
            )
        known.slugs.add(row["slug"])
    for _, row in t["members"]:
        plan.usernames.add(row["username"])
    seen: dict[Any, str] = {}

    def once(key: Any, where: str, what: str) -> bool:
        if key in seen:
            errors.add(f"{where}: same {what} as {seen[key]}; one row each")
            return False
        seen[key] = where
        return True

    for where, row in t["queries"]:
        if once(("q", row["external_id"]), where, "query external_id"):
            known.queries.add(row["external_id"])
        plan.usernames.update(row["assigned_experts"] or [])
        if row["created_by"]:
            plan.usernames.add(row["created_by"])
    for where, row in t["checklists"]:
        key = (row["query"], row["author"])
        if row["query"] not in known.queries:
            errors.add(
                f"{where}: field 'query': no query {row['query']!r} in the files or the dataset"
            )
            continue
        if (
            row["guideline"]
            and (row["guideline"], row["guideline_version"] or 1) not in guideline_keys
        ):
            errors.add(
                f"{where}: field 'guideline': no guideline {row['guideline']} "
                f"v{row['guideline_version'] or 1} in guidelines or here"
            )
        if once(("c", key), where, "query and author"):
            known.checklists.add(key)
            plan.usernames.add(row["author"])
    for where, row in t["criteria"]:
        key = (row["query"], row["author"], row["external_id"])
        if (row["query"], row["author"]) not in known.checklists:
            errors.add(
                f"{where}: field 'author': no checklist of {row['author']!r} for query "
                f"{row['query']!r} in checklists or the dataset"
            )
            continue
        for slug in row["source_types"] or []:
            if slug not in known.slugs:
                errors.add(f"{where}: field 'source_types': no source type {slug!r}")
        if row["weight"] is not None and not 0 <= row["weight"] < 10_000:
            errors.add(f"{where}: field 'weight' must be from 0 to 9999.99")
        if once(("k", key), where, "query, author and external_id"):
            known.criteria.add(key)
    _check_previous_versions(t["criteria"], known, errors)
    for where, row in t["citations"]:
        if (row["query"], row["author"], row["criterion"]) not in known.criteria:
            errors.add(f"{where}: field 'criterion': no criterion {row['criterion']!r} of "
                       f"{row['author']!r} for query {row['query']!r}")  # fmt: skip
        if row["source_type"] and row["source_type"] not in known.slugs:
            errors.add(f"{where}: field 'source_type': no source type {row['source_type']!r}")
    for where, row in t["perfect_answers"]:
        key = (row["query"], row["author"])
        if key not in known.checklists:
            errors.add(f"{where}: field 'author': no checklist of {row['author']!r} for query "
                       f"{row['query']!r}")  # fmt: skip
            continue
        if once(("p", key), where, "query and author"):
            known.answers.add((REFERENCE_SYSTEM, "", row["query"], perfect_label(row["author"])))
        if row["written_by"]:
            plan.usernames.add(row["written_by"])
    for where, row in t["judges"]:
        if once(("j", row["name"]), where, "judge name"):
            known.judges.add(row["name"])
    panels: set[str] = {p.name for p in Panel.objects.all()}
    for where, row in t["panels"]:
        members = row["members"]
        if not isinstance(members, list) or not all(
            isinstance(m, dict) and m.get("judge") in known.judges for m in members
        ):
            errors.add(f"{where}: field 'members': a list of {{\"judge\", \"samples\"}} naming "
                       "judges of judges.jsonl or of this installation")  # fmt: skip
            continue
        if once(("panel", row["name"]), where, "panel name"):
            panels.add(row["name"])
    for where, row in t["runs"]:
        if row["panel"] not in panels:
            errors.add(f"{where}: field 'panel': no panel {row['panel']!r}")
            continue
        if once(("r", row["run"]), where, "run"):
            known.runs.add(row["run"])
    _check_guideline(plan, errors, options)


def _check_previous_versions(rows: list[tuple[str, dict]], known: _Known, errors: _Errors) -> None:
    """A criterion's previous_version names another criterion of its checklist, and no two
    criteria name the same one (a wording has one successor)."""
    successor: dict[CriterionKey, str] = {}
    for where, row in rows:
        previous = row["previous_version"]
        if not previous:
            continue
        key = (row["query"], row["author"], previous)
        if previous == row["external_id"] or key not in known.criteria:
            errors.add(
                f"{where}: field 'previous_version': no other criterion {previous!r} in the "
                f"checklist of {row['author']!r} for query {row['query']!r}"
            )
        elif key in successor:
            errors.add(
                f"{where}: field 'previous_version': criterion {previous!r} is already the "
                f"previous version of the criterion at {successor[key]}"
            )
        else:
            successor[key] = where


def _check_guideline(plan: _Plan, errors: _Errors, options: ImportOptions) -> None:
    """Submitted checklists of the files against the dataset's guideline: their findings
    become warnings, or errors with on_guideline_errors="refuse"."""
    if plan.guideline is not None:
        config = guideline_rules.config_of(plan.guideline)
        label = str(plan.guideline)
    elif plan.guideline_from_file is not None:
        name, version = plan.guideline_from_file
        row = next(
            r for _, r in plan.tables["guidelines"] if (r["name"], r["version"]) == (name, version)
        )
        config = GuidelineConfig.from_dict(row["config"])
        label = f"{name} v{version}"
    else:
        default = guideline_rules.guideline_for(Dataset())
        config = guideline_rules.config_of(default)
        label = str(default) if default else "the default guideline"
    dates = {row["external_id"]: row["query_date"] for _, row in plan.tables["queries"]}
    citations: dict[CriterionKey, list[CitationInput]] = defaultdict(list)
    for _, row in plan.tables["citations"]:
        citations[(row["query"], row["author"], row["criterion"])].append(
            CitationInput(row["title"], row["url"], row["source_type"], row["published_on"])
        )
    criteria: dict[tuple[str, str], list[CriterionInput]] = defaultdict(list)
    seen: set[CriterionKey] = set()
    for _, row in sorted(plan.tables["criteria"], key=lambda pair: pair[1]["position"] or 0):
        key = (row["query"], row["author"], row["external_id"])
        if key in seen or row["kind"] not in schema_kinds or row["archived_at"]:
            continue  # reported already, or archived: not part of the checklist
        seen.add(key)
        criteria[key[:2]].append(
            CriterionInput(
                key=row["external_id"], text=row["text"], kind=row["kind"],
                source_types=tuple(row["source_types"] or ()), citations=tuple(citations[key]),
            )
        )  # fmt: skip
    for where, row in plan.tables["checklists"]:
        key = (row["query"], row["author"])
        if row["status"] != Checklist.Status.SUBMITTED or key not in criteria:
            continue
        report = validate_checklist(
            ChecklistInput(criteria=criteria[key], query_date=dates.get(row["query"])), config
        )
        if not report.errors:
            continue
        findings = "; ".join(
            f"{f.rule_id}"
            + (f" (criterion {f.criterion_number}, {f.criterion_key})" if f.criterion_key else "")
            for f in report.errors
        )
        message = (
            f"{where}: checklist of {row['author']!r} for query {row['query']!r} breaks "
            f"{label}: {findings}"
        )
        if options.on_guideline_errors == "refuse":
            errors.add(message)
        else:
            plan.warnings.append(message)


def _check_big(source: Source, table: str, plan: _Plan, known: _Known, errors: _Errors) -> int:
    """Check a streamed table row by row; nothing of it is kept but the count (and, for
    answers, their keys: verdicts and labels may name them)."""
    count = 0
    for where, _, row in _rows(source, table, errors):
        count += 1
        _check_big_row(where, table, row, plan, known, errors)
    return count


def _check_big_row(
    where: str, table: str, row: dict, plan: _Plan, known: _Known, errors: _Errors
) -> bool:
    """Check one row of a big table against the keys known; False when it has an error."""
    found: list[str] = []
    if table == "answers":
        key = (row["system"], row["system_version"], row["query"], row["run_label"])
        if row["query"] not in known.queries:
            found.append(f"{where}: field 'query': no query {row['query']!r}")
        elif row["run_label"].startswith("perfect:") or row["system"] == REFERENCE_SYSTEM:
            found.append(f"{where}: field 'system': perfect answers go in perfect_answers")
        else:
            known.answers.add(key)
        return _report(found, errors)
    answer = (row["system"], row["system_version"], row["query"], row["run_label"])
    if answer not in known.answers:
        found.append(
            f"{where}: field 'system': no answer of {row['system']!r} "
            f"{row['system_version']!r} to query {row['query']!r} with run label "
            f"{row['run_label']!r} in answers or the dataset"
        )
    if table == "grades":
        _check_grade(where, row, known, found)
        return _report(found, errors)
    if (row["query"], row["author"], row["criterion"]) not in known.criteria:
        found.append(
            f"{where}: field 'criterion': no criterion {row['criterion']!r} of "
            f"{row['author']!r} for query {row['query']!r}"
        )
    if table == "verdicts":
        if row["run"] not in known.runs:
            found.append(f"{where}: field 'run': no run {row['run']!r} in runs or the dataset")
        if row["judge"] not in known.judges:
            found.append(f"{where}: field 'judge': no judge {row['judge']!r}")
        if row["sample"] is not None and not 0 <= row["sample"] <= 1000:
            found.append(f"{where}: field 'sample' must be from 0 to 1000")
    elif table == "labels":
        if row["reviewer"]:
            plan.usernames.add(row["reviewer"])
    elif row["decided_by"]:
        plan.usernames.add(row["decided_by"])
    return _report(found, errors)


def _report(found: list[str], errors: _Errors) -> bool:
    for message in found:
        errors.add(message)
    return not found


def _check_grade(where: str, row: dict, known: _Known, found: list[str]) -> None:
    if row["run"] not in known.runs:
        found.append(f"{where}: field 'run': no run {row['run']!r} in runs or the dataset")
    if row["judge"] not in known.judges:
        found.append(f"{where}: field 'judge': no judge {row['judge']!r}")
    if row["sample"] is not None and not 0 <= row["sample"] <= 1000:
        found.append(f"{where}: field 'sample' must be from 0 to 1000")
    if row["score"] is not None and not 1 <= row["score"] <= 5:
        found.append(f"{where}: field 'score' must be from 1 to 5")
    elif (row["score"] is None) == (row["outcome"] == GradedScore.Outcome.SCORED):
        found.append(f"{where}: field 'score' is given exactly when the outcome is scored")


# --- writing ---------------------------------------------------------------------------


def _lock(name: str) -> None:
    """One import of a dataset at a time. SQLite's IMMEDIATE transactions already take the
    database's write lock at BEGIN; PostgreSQL gets an advisory lock for this dataset."""
    if connection.vendor == "postgresql":
        key = int.from_bytes(
            hashlib.sha256(f"import:{name}".encode()).digest()[:8], "big", signed=True
        )
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])


def import_dataset(path: Path, options: ImportOptions | None = None) -> ImportResult:
    """Check, then write. ImportRejected (nothing written) lists every error."""
    options = options or ImportOptions()
    with Source(path) as source:
        plan, _ = check(source, options)
        name = options.dataset.name if options.dataset else str(plan.meta["name"]).strip()
        with transaction.atomic():
            _lock(name)
            writer = _Writer(source, plan, options)
            try:
                return writer.write()
            except bulk.Duplicates as exc:
                raise ImportRejected(writer.duplicate_errors(exc)) from None


class _Writer:
    def __init__(self, source: Source, plan: _Plan, options: ImportOptions) -> None:
        self.source = source
        self.plan = plan
        self.options = options
        self.now = timezone.now()
        self.current = ""

    def duplicate_errors(self, exc: bulk.Duplicates) -> list[str]:
        name = self.source.table_file(self.current) or self.current
        return [
            f"{name}:{line}: same {KEY_WORDS[self.current]} as line {first}; one row each"
            for line, first in exc.pairs
        ]

    def write(self) -> ImportResult:
        options, meta = self.options, self.plan.meta
        dataset = options.dataset
        if dataset is None:
            dataset = Dataset.objects.filter(name=str(meta["name"]).strip()).first()
        result = ImportResult(dataset=dataset, warnings=list(self.plan.warnings))  # type: ignore[arg-type]
        self.result = result
        self.users = self._users()
        guidelines = self._guidelines()
        guideline = self.plan.guideline or (
            guidelines.get(self.plan.guideline_from_file) if self.plan.guideline_from_file else None
        )
        if dataset is None:
            dataset = Dataset(name=str(meta["name"]).strip(), created_by=options.by)
            result.dataset_created = True
        self._dataset_settings(dataset, meta, guideline)
        result.dataset = dataset
        if result.dataset_created and options.by is not None:
            dataset_set_role(dataset=dataset, user=options.by, role=roles.DatasetRole.ADMIN)
        self.dataset = dataset
        self._source_types()
        self._members()
        self.stored = _StoredKeys(dataset)
        self._queries()
        self._checklists(guidelines)
        self._criteria()
        self._citations()
        self.stored = _StoredKeys(dataset)
        self._perfect_answers()
        self._systems_and_answers()
        self.stored = _StoredKeys(dataset)
        self._judges_panels_runs()
        self.stored = _StoredKeys(dataset)
        self._verdicts()
        self._grades()
        self._labels()
        self._adjudications()
        # Bulk writes send no signal: kept figures are keyed by the dataset's review
        # counters, which an import may change in any of its tables.
        bump(dataset.pk, Event.DATASET_IMPORTED)
        return result

    # structure ---------------------------------------------------------------------

    def _users(self) -> dict[str, int]:
        users = get_user_model()
        found = dict(
            users.objects.filter(username__in=self.plan.usernames).values_list("username", "pk")
        )
        for username in sorted(self.plan.usernames - set(found)):
            user = users(username=username)
            user.set_unusable_password()  # named by the files; an admin gives them a password
            user.save()
            found[username] = user.pk
            self.result.count("users", created=1)
        return found

    def _guidelines(self) -> dict[tuple[str, int], Guideline]:
        stored = {(g.name, g.version): g for g in Guideline.objects.all()}
        for _, row in self.plan.tables["guidelines"]:
            key = (row["name"], row["version"])
            if key not in stored:
                stored[key] = Guideline.objects.create(
                    name=row["name"], version=row["version"], description=row["description"],
                    config=row["config"],
                )  # fmt: skip
                self.result.count("guidelines", created=1)
            else:
                self.result.count("guidelines", unchanged=1)
        return stored

    def _dataset_settings(self, dataset: Dataset, meta: dict, guideline: Guideline | None) -> None:
        fields = {k: meta[k] for k in SETTINGS if k in meta}
        if guideline is not None or self.options.guideline is not None:
            fields["guideline"] = self.options.guideline or guideline
        changed = [k for k, v in fields.items() if getattr(dataset, k) != v]
        for k in changed:
            setattr(dataset, k, fields[k])
        if dataset.pk is None:
            dataset.save()
            self.result.count("datasets", created=1)
        elif changed:
            dataset.save(update_fields=changed)
            self.result.count("datasets", updated=1)

    def _source_types(self) -> None:
        existing = set(SourceType.objects.values_list("slug", flat=True))
        for _, row in self.plan.tables["source_types"]:
            if row["slug"] in existing:
                self.result.count("source_types", unchanged=1)  # site-wide: never rewritten
                continue
            SourceType.objects.create(
                slug=row["slug"], name=row["name"], is_banned=bool(row["is_banned"]),
                description=row["description"],
            )  # fmt: skip
            existing.add(row["slug"])
            self.result.count("source_types", created=1)
        self.slugs = dict(SourceType.objects.values_list("slug", "pk"))

    def _members(self) -> None:
        """Roles for people not yet members; an existing member's role is never changed."""
        from annotation.permissions import dataset_permissions

        users = get_user_model().objects.in_bulk(list(self.users.values()))
        for _, row in self.plan.tables["members"]:
            user = users[self.users[row["username"]]]
            if roles.role_for_permissions(dataset_permissions(user, self.dataset)) is None:
                dataset_set_role(
                    dataset=self.dataset, user=user, role=roles.DatasetRole(row["role"])
                )
                self.result.count("members", created=1)
            else:
                self.result.count("members", unchanged=1)

    def _queries(self) -> None:
        categories = {c.name: c for c in QueryCategory.objects.all()}
        queries = {
            q.pk: q
            for q in Query.objects.filter(dataset=self.dataset).prefetch_related(
                "tags", "assigned_experts"
            )
        }
        for _, row in self.plan.tables["queries"]:
            category = None
            if row["category"]:
                if row["category"] not in categories:
                    categories[row["category"]] = QueryCategory.objects.create(name=row["category"])
                category = categories[row["category"]]
            values = {
                "text": row["text"], "query_date": row["query_date"], "category": category,
                "reference_answer": row["reference_answer"],
                "status": row["status"] or Query.Status.OPEN,
                "complexity": row["complexity"],
                "created_by_id": self.users.get(row["created_by"]) if row["created_by"] else None,
            }  # fmt: skip
            pk = self.stored.queries.get(row["external_id"])
            query = queries.get(pk) if pk else None
            changed = query is None
            if query is None:
                query = Query.objects.create(
                    dataset=self.dataset, external_id=row["external_id"], **values
                )
                self.stored.queries[row["external_id"]] = query.pk
            else:
                diff = [k for k, v in values.items() if getattr(query, k) != v]
                for k in diff:
                    setattr(query, k, values[k])
                if diff:
                    query.save(update_fields=diff)
                    changed = True
            tags = sorted(row["tags"] or [])
            if changed or sorted(t.name for t in query.tags.all()) != tags:
                query.tags.set([DomainTag.objects.get_or_create(name=t)[0] for t in tags])
                changed = True
            experts = sorted(row["assigned_experts"] or [])
            if changed or sorted(u.get_username() for u in query.assigned_experts.all()) != experts:
                query.assigned_experts.set([self.users[u] for u in experts])
                changed = True
            new = pk is None
            self.result.count(
                "queries", created=int(new), updated=int(changed and not new),
                unchanged=int(not changed),
            )  # fmt: skip

    def _checklists(self, guidelines: dict[tuple[str, int], Guideline]) -> None:
        checklists = {c.pk: c for c in Checklist.objects.filter(query__dataset=self.dataset)}
        self.touched: dict[int, str] = {}
        warned = {w.split(": checklist", 1)[0] for w in self.plan.warnings}
        for where, row in self.plan.tables["checklists"]:
            guideline = (
                guidelines[(row["guideline"], row["guideline_version"] or 1)]
                if row["guideline"]
                else None
            )
            values = {
                "status": row["status"], "guideline": guideline,
                "first_submitted_at": row["first_submitted_at"],
                "submitted_at": row["submitted_at"],
            }  # fmt: skip
            key = (row["query"], row["author"])
            pk = self.stored.checklists.get(key)
            if pk is None:
                checklist = Checklist.objects.create(
                    query_id=self.stored.queries[row["query"]], author_id=self.users[row["author"]],
                    **values,
                )  # fmt: skip
                self.stored.checklists[key] = checklist.pk
                self.touched[checklist.pk] = "created"
                self.result.count("checklists", created=1)
            else:
                checklist = checklists[pk]
                diff = [k for k, v in values.items() if getattr(checklist, k) != v]
                for k in diff:
                    setattr(checklist, k, values[k])
                if diff:
                    checklist.save(update_fields=[*diff, "updated_at"])
                    self.touched[pk] = "updated"
                self.result.count("checklists", updated=int(bool(diff)), unchanged=int(not diff))
            if where in warned:
                self.touched[self.stored.checklists[key]] = "breaks the guideline"

    def _criteria(self) -> None:
        stored = {
            c.pk: c
            for c in Criterion.objects.filter(
                checklist__query__dataset=self.dataset
            ).prefetch_related("source_types")
        }
        judged = set(
            Verdict.objects.filter(criterion__in=stored).values_list("criterion_id", flat=True)
        ) | set(
            HumanLabel.objects.filter(criterion__in=stored).values_list("criterion_id", flat=True)
        ) | set(
            Adjudication.objects.filter(criterion__in=stored).values_list("criterion_id", flat=True)
        )  # fmt: skip
        errors: list[str] = []
        new: list[tuple[Criterion, list[str]]] = []
        self.criteria_ids = dict(self.stored.criteria)
        for where, row in self.plan.tables["criteria"]:
            key = (row["query"], row["author"], row["external_id"])
            values = {
                "position": row["position"] or 0, "text": row["text"], "kind": row["kind"],
                "notes": row["notes"],
                "weight": Decimal(str(row["weight"] if row["weight"] is not None else 1)).quantize(
                    Decimal("0.01")
                ),
                "is_core": row["is_core"] is not False,
                "scoring_enabled": row["scoring_enabled"] is not False,
                "archived_at": row["archived_at"],
            }  # fmt: skip
            slugs = sorted(row["source_types"] or [])
            pk = self.stored.criteria.get(key)
            if pk is None:
                checklist_id = self.stored.checklists[key[:2]]
                criterion = Criterion(
                    checklist_id=checklist_id, external_id=row["external_id"], **values
                )
                new.append((criterion, slugs))
                self.touched.setdefault(checklist_id, "updated")
                continue
            criterion = stored[pk]
            diff = [k for k, v in values.items() if getattr(criterion, k) != v]
            if "text" in diff and pk in judged:
                errors.append(
                    f"{where}: field 'text': criterion {row['external_id']!r} carries verdicts, "
                    "labels or adjudications here; its text cannot change by import"
                )
                continue
            for k in diff:
                setattr(criterion, k, values[k])
            if diff:
                criterion.save(update_fields=diff)
            same_types = sorted(st.slug for st in criterion.source_types.all()) == slugs
            if not same_types:
                criterion.source_types.set([self.slugs[s] for s in slugs])
            changed = bool(diff) or not same_types
            if changed:
                self.touched.setdefault(criterion.checklist_id, "updated")
            self.result.count("criteria", updated=int(changed), unchanged=int(not changed))
        if errors:
            raise ImportRejected(errors)
        Criterion.objects.bulk_create([c for c, _ in new], batch_size=1000)
        through = Criterion.source_types.through
        through.objects.bulk_create(
            [
                through(criterion_id=c.pk, sourcetype_id=self.slugs[s])
                for c, slugs in new
                for s in slugs
            ],
            batch_size=1000,
        )
        self.result.count("criteria", created=len(new))
        self.stored = _StoredKeys(self.dataset)
        self._previous_versions()

    def _previous_versions(self) -> None:
        """Link each criterion to the wording it replaced, once every criterion exists."""
        wanted: dict[int, int | None] = {}
        for _, row in self.plan.tables["criteria"]:
            key = (row["query"], row["author"], row["external_id"])
            previous = row["previous_version"]
            wanted[self.stored.criteria[key]] = (
                self.stored.criteria[(*key[:2], previous)] if previous else None
            )
        current = {
            pk: (previous, checklist_id)
            for pk, previous, checklist_id in Criterion.objects.filter(pk__in=wanted).values_list(
                "pk", "previous_version_id", "checklist_id"
            )
        }
        changed = {pk: prev for pk, prev in wanted.items() if current[pk][0] != prev}
        # Unlink first: a one-to-one link may move from one criterion to another.
        Criterion.objects.filter(pk__in=changed).update(previous_version=None)
        for pk, previous in changed.items():
            if previous is not None:
                Criterion.objects.filter(pk=pk).update(previous_version_id=previous)
            self.touched.setdefault(current[pk][1], "updated")

    def _citations(self) -> None:
        wanted: dict[int, list[tuple]] = defaultdict(list)
        for _, row in self.plan.tables["citations"]:
            criterion_id = self.stored.criteria[(row["query"], row["author"], row["criterion"])]
            wanted[criterion_id].append(
                (
                    row["title"],
                    row["url"],
                    self.slugs.get(row["source_type"]) if row["source_type"] else None,
                    row["published_on"],
                )
            )
        have: dict[int, list[tuple]] = defaultdict(list)
        for c in Citation.objects.filter(criterion_id__in=list(wanted)).order_by("pk"):
            have[c.criterion_id].append((c.title, c.url, c.source_type_id, c.published_on))
        replace = [pk for pk, rows in wanted.items() if rows != have.get(pk, [])]
        Citation.objects.filter(criterion_id__in=replace).delete()
        Citation.objects.bulk_create(
            [
                Citation(criterion_id=pk, title=t, url=u, source_type_id=s, published_on=p)
                for pk in replace
                for t, u, s, p in wanted[pk]
            ],
            batch_size=1000,
        )
        created = sum(len(wanted[pk]) for pk in replace)
        self.result.count(
            "citations", created=created, unchanged=sum(map(len, wanted.values())) - created
        )
        checklist_of = dict(
            Criterion.objects.filter(pk__in=replace).values_list("pk", "checklist_id")
        )
        for pk in replace:
            self.touched.setdefault(checklist_of[pk], "updated")
        self._events()

    def _events(self) -> None:
        """Every checklist the import created or changed gets a history entry, with its
        guideline findings when it breaks the dataset's guideline (never silently)."""
        from annotation.services.checklists import snapshots

        findings = {}
        for message in self.plan.warnings:
            where, _, rest = message.partition(": checklist ")
            findings[where] = rest
        by_key = {v: k for k, v in self.stored.checklists.items()}
        wheres = {(r["query"], r["author"]): w for w, r in self.plan.tables["checklists"]}
        source = self.source.path.name
        touched = sorted(self.touched)
        # A batch of checklists at a time: the snapshots of every checklist of a big import
        # at once (10,000 criteria with their prefetched citations) took the import's peak
        # memory from about 150 MB to 220 MB, over the 200 MB bound of issue 11.
        for start in range(0, len(touched), EVENT_BATCH):
            batch = touched[start : start + EVENT_BATCH]
            states = snapshots(batch)
            events = []
            for checklist in Checklist.objects.filter(pk__in=batch):
                state = self.touched[checklist.pk]
                where = wheres.get(by_key.get(checklist.pk))
                detail = (
                    f"{'Imported' if state == 'created' else 'Updated by an import'} from {source}"
                )
                if where in findings:
                    detail = (
                        f"Imported from {source}; breaks {findings[where].split(' breaks ', 1)[-1]}"
                    )
                    detail = f"{detail[:290]}…" if len(detail) > 300 else detail
                events.append(
                    ChecklistEvent(
                        checklist=checklist, actor=self.options.by, detail=detail[:300],
                        action=ChecklistEvent.Action.CREATED
                        if state == "created"
                        else ChecklistEvent.Action.EDITED,
                        snapshot=states[checklist.pk],
                    )
                )  # fmt: skip
            ChecklistEvent.objects.bulk_create(events, batch_size=500)

    def _perfect_answers(self) -> None:
        judges = dict(Judge.objects.values_list("name", "pk"))
        reference = None
        for _, row in self.plan.tables["perfect_answers"]:
            checklist_id = self.stored.checklists[(row["query"], row["author"])]
            values = {
                "text": row["text"],
                "author_id": self.users.get(row["written_by"]) if row["written_by"] else None,
                "drafted_by_id": judges.get(row["drafted_by"]) if row["drafted_by"] else None,
                "draft_prompt_version": row["draft_prompt_version"],
            }
            answer = Answer.objects.filter(checklist_id=checklist_id).first()
            if answer is None:
                reference = reference or reference_system()
                checklist = Checklist(pk=checklist_id)
                Answer.objects.create(
                    system=reference, query_id=self.stored.queries[row["query"]],
                    checklist_id=checklist_id, run_label=perfect_run_label(checklist), **values,
                )  # fmt: skip
                self.result.count("perfect_answers", created=1)
                continue
            diff = [k for k, v in values.items() if getattr(answer, k) != v]
            for k in diff:
                setattr(answer, k, values[k])
            if diff:
                answer.save(update_fields=[*diff, "updated_at"])
            self.result.count("perfect_answers", updated=int(bool(diff)), unchanged=int(not diff))

    def _systems_and_answers(self) -> None:
        systems = {(s.name, s.version): s for s in System.objects.all()}
        for _, row in self.plan.tables["systems"]:
            key = (row["name"], row["version"])
            if key not in systems:
                systems[key] = System.objects.create(
                    name=key[0], version=key[1], description=row["description"]
                )
                self.result.count("systems", created=1)
            elif systems[key].description != row["description"] and row["description"]:
                System.objects.filter(pk=systems[key].pk).update(description=row["description"])
                self.result.count("systems", updated=1)
            else:
                self.result.count("systems", unchanged=1)
        if not self.plan.big.get("answers"):
            return
        # Systems named only in answers are created too.
        for _, _, row in _rows(self.source, "answers", _Errors()):
            key = (row["system"], row["system_version"])
            if key not in systems:
                systems[key] = System.objects.create(name=key[0], version=key[1])
                self.result.count("systems", created=1)
        ids = {k: s.pk for k, s in systems.items()}

        def rows() -> Iterator[tuple]:
            for _, line, row in _rows(self.source, "answers", _Errors()):
                yield (
                    line, ids[(row["system"], row["system_version"])],
                    self.stored.queries[row["query"]], row["run_label"], row["external_id"],
                    row["text"], self.now, self.now,
                )  # fmt: skip

        self._upsert(
            "answers", Answer, keys=("system_id", "query_id", "run_label"),
            columns=("system_id", "query_id", "run_label", "external_id", "text", "created_at",
                     "updated_at"),
            rows=rows(),
        )  # fmt: skip

    def _judges_panels_runs(self) -> None:
        judges = {j.name: j for j in Judge.objects.all()}
        for _, row in self.plan.tables["judges"]:
            if row["name"] in judges:
                self.result.count("judges", unchanged=1)  # site-wide: never rewritten
                continue
            values = {
                k: row[k]
                for k in ("kind", "base_url", "model", "api_key_env", "temperature", "max_tokens",
                          "seed", "timeout", "prompt_version")
                if row[k] is not None
            }  # fmt: skip
            judges[row["name"]] = Judge.objects.create(name=row["name"], **values)
            self.result.count("judges", created=1)
        panels = {p.name: p for p in Panel.objects.all()}
        for _, row in self.plan.tables["panels"]:
            if row["name"] in panels:
                self.result.count("panels", unchanged=1)
                continue
            panel = Panel.objects.create(
                name=row["name"], description=row["description"], method=row["method"],
                threshold=0.5 if row["threshold"] is None else row["threshold"],
                graded=bool(row["graded"]),
            )  # fmt: skip
            for m in row["members"]:
                PanelMember.objects.create(
                    panel=panel, judge=judges[m["judge"]], samples=int(m.get("samples") or 1),
                    temperatures=m.get("temperatures") or [],
                )  # fmt: skip
            panels[row["name"]] = panel
            self.result.count("panels", created=1)
        self.runs_before = set(self.stored.runs)
        for _, row in self.plan.tables["runs"]:
            if row["run"] in self.stored.runs:
                self.result.count("runs", unchanged=1)
                continue
            status = row["status"] or Run.Status.DONE
            if status not in Run.ENDED:
                # No task of it runs here: it stops, and Resume records its tasks anew.
                status = Run.Status.CANCELLED
            panel = panels[row["panel"]]
            run = Run.objects.create(
                dataset=self.dataset, panel=panel, kind=row["kind"], name=row["run"],
                status=status, reason=row.get("reason") or "",
                answer_run_label=row["answer_run_label"],
                # The run's figures use the panel it was graded with, not the panel as
                # found here; older exports without it take the panel's.
                snapshot=row.get("snapshot") or snapshot.take(panel),
                started_at=row["created_at"], finished_at=row["finished_at"],
            )  # fmt: skip
            if row["created_at"]:
                Run.objects.filter(pk=run.pk).update(created_at=row["created_at"])
            self.stored.runs[row["run"]] = run.pk
            self.result.count("runs", created=1)

    # items -------------------------------------------------------------------------

    def _item(self, row: dict) -> tuple[int, int]:
        answer = (row["system"], row["system_version"], row["query"], row["run_label"])
        return (
            self.stored.answers[answer],
            self.stored.criteria[(row["query"], row["author"], row["criterion"])],
        )

    def _upsert(self, table: str, model, **kwargs: Any) -> None:
        self.current = table
        done = bulk.upsert(model, **kwargs)
        self.result.count(table, done.created, done.updated, done.unchanged)

    def _verdicts(self) -> None:
        if not self.plan.big.get("verdicts"):
            return
        judges = dict(Judge.objects.values_list("name", "pk"))

        errors, known = _Errors(), self.plan.known
        written = 0

        def rows() -> Iterator[tuple]:
            nonlocal written
            written = 0  # the file may be read twice (bulk.upsert's fresh path)
            errors.clear()
            for where, line, r in _rows(self.source, "verdicts", errors):
                if not _check_big_row(where, "verdicts", r, self.plan, known, errors):
                    continue
                written += 1
                answer_id, criterion_id = self._item(r)
                yield (
                    line, self.stored.runs[r["run"]], answer_id, criterion_id, judges[r["judge"]],
                    r["sample"] or 0, r["outcome"], r["failure_kind"], r["rationale"],
                    *self._call_record(r),
                )  # fmt: skip

        self._upsert(
            "verdicts", Verdict,
            keys=("run_id", "answer_id", "criterion_id", "judge_id", "sample"),
            columns=(
                "run_id", "answer_id", "criterion_id", "judge_id", "sample", "outcome",
                "failure_kind", "rationale", *CALL_COLUMNS,
            ),
            json_columns=("judge_params",), rows=rows,
            # No run of the dataset existed before this import: no stored verdict can match.
            fresh=not self.runs_before,
        )  # fmt: skip
        if errors:
            raise ImportRejected(list(errors))  # the transaction rolls back every write
        self.plan.big["verdicts"] = written

    def _call_record(self, r: dict) -> tuple:
        """A verdict's or a grade's judge-call values, in CALL_COLUMNS order."""
        return (
            r["raw_output"], r["error_kind"], r["error"], r["prompt_tokens"] or 0,
            r["completion_tokens"] or 0, r["latency_ms"] or 0, r["attempts"] or 1,
            bool(r["cache_hit"]), r["cache_key"], r["judge_params"] or {},
            r["created_at"] or self.now, self.now,
        )  # fmt: skip

    def _grades(self) -> None:
        if not self.plan.big.get("grades"):
            return
        judges = dict(Judge.objects.values_list("name", "pk"))

        def rows() -> Iterator[tuple]:
            for _, line, r in _rows(self.source, "grades", _Errors()):
                answer = (r["system"], r["system_version"], r["query"], r["run_label"])
                yield (
                    line, self.stored.runs[r["run"]], self.stored.answers[answer],
                    judges[r["judge"]], r["sample"] or 0, r["outcome"], r["score"],
                    r["reasoning"], *self._call_record(r),
                )  # fmt: skip

        self._upsert(
            "grades", GradedScore, keys=("run_id", "answer_id", "judge_id", "sample"),
            columns=(
                "run_id", "answer_id", "judge_id", "sample", "outcome", "score", "reasoning",
                *CALL_COLUMNS,
            ),
            json_columns=("judge_params",), rows=rows(),
        )  # fmt: skip

    def _labels(self) -> None:
        if not self.plan.big.get("labels"):
            return

        def rows() -> Iterator[tuple]:
            for _, line, r in _rows(self.source, "labels", _Errors()):
                answer_id, criterion_id = self._item(r)
                yield (
                    line, answer_id, criterion_id, r["rater"], r["label"], r["note"],
                    r["source"] or HumanLabel.Source.IMPORT,
                    self.users.get(r["reviewer"]) if r["reviewer"] else None,
                    r["created_at"] or self.now, r["updated_at"] or self.now,
                )  # fmt: skip

        self._upsert(
            "labels", HumanLabel, keys=("answer_id", "criterion_id", "rater"),
            columns=("answer_id", "criterion_id", "rater", "label", "note", "source",
                     "reviewer_id", "created_at", "updated_at"),
            rows=rows(),
        )  # fmt: skip

    def _adjudications(self) -> None:
        if not self.plan.big.get("adjudications"):
            return

        def rows() -> Iterator[tuple]:
            for _, line, r in _rows(self.source, "adjudications", _Errors()):
                answer_id, criterion_id = self._item(r)
                yield (
                    line, answer_id, criterion_id, r["label"], r["reason"],
                    self.users.get(r["decided_by"]) if r["decided_by"] else None,
                    r["decided_at"] or self.now, r["version"] or 1,
                )  # fmt: skip

        self._upsert(
            "adjudications", Adjudication, keys=("answer_id", "criterion_id"),
            columns=("answer_id", "criterion_id", "label", "reason", "decided_by_id",
                     "decided_at", "version"),
            keep_on_update=(), rows=rows(),
        )  # fmt: skip


# The judge-call columns verdicts and grades share (JudgeCall), as _call_record fills them.
CALL_COLUMNS = (*JudgeCall.RECORD_FIELDS, "judge_params", "created_at", "updated_at")

KEY_WORDS = {
    "answers": "system, version, query and run label",
    "verdicts": "run, answer, criterion, judge and sample",
    "grades": "run, answer, judge and sample",
    "labels": "answer, criterion and rater",
    "adjudications": "answer and criterion",
}
