"""Reading and checking a dataset import (the first phase of evaluation.datasets.importer):
every file is read and every row checked, against what the files define and what the
database already holds, and nothing is written. Any error rejects the import with every
error listed as `file:line: field 'name': problem`. The result is a `Plan` that the writer
follows. See docs/data-formats.md#dataset-import.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from annotation import guidelines as guideline_rules
from annotation import roles, scoring
from annotation.models import (
    Checklist,
    Criterion,
    CriterionGroup,
    Dataset,
    Guideline,
    Query,
    Scoring,
    SourceType,
    Undecided,
)
from annotation.services.datasets import DATASET_SETTINGS
from annotation.validation import (
    ChecklistInput,
    CitationInput,
    CriterionInput,
    GuidelineConfig,
    validate_checklist,
)
from evaluation.answers import agent_fields
from evaluation.answers.models import Answer
from evaluation.checks import trajectory
from evaluation.cross_evaluation.services import REFERENCE_SYSTEM
from evaluation.datasets import import_target
from evaluation.datasets.export import criterion_key, perfect_label, query_key
from evaluation.datasets.source import Source
from evaluation.judges import tuning
from evaluation.judges.models import Judge, Panel
from evaluation.judging import batched
from evaluation.labels.models import HumanLabel, Label
from evaluation.metrics import rubrics
from evaluation.pairwise.models import PairwiseJudgeVote, PairwiseVote, Preference
from evaluation.runs.models import GradedScore, Run, Verdict
from evaluation.tables import schema
from evaluation.tables.formats import FileRejected, cell
from evaluation.tables.rows import ImportRejected  # one refusal for every import

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

logger = logging.getLogger(__name__)

MAX_ERRORS = 200
MAX_EXPECTED = 2_147_483_647  # Run.expected, a positive integer column
ON_GUIDELINE_ERRORS = ("warn", "refuse")
schema_kinds = frozenset(Criterion.Kind.values)
AnswerKey = tuple[str, str, str, str, int]  # system, version, query, run label, sample


def answer_key(row: dict) -> AnswerKey:
    """The answer a row names: in the answers table by its `sample`, in a table of items
    (verdicts, grades, labels, adjudications) by its `answer_sample`; an empty sample (a
    file exported before answers had samples) is sample 0."""
    sample = row["sample"] if "answer_sample" not in row else row["answer_sample"]
    return (row["system"], row["system_version"], row["query"], row["run_label"], sample or 0)


CriterionKey = tuple[str, str, str]  # query, author, criterion


@dataclass(frozen=True)
class ImportOptions:
    """Where and how to import (evaluation.datasets.import_target): into `dataset`, else into a
    new dataset named `as_copy`, else into a new dataset named as dataset.json says."""

    dataset: Dataset | None = None  # import into this dataset (its admin chose it)
    as_copy: str = ""  # or: a new dataset of this name (a copy of the files' dataset)
    guideline: Guideline | None = None  # the dataset's guideline (default: the file's)
    on_guideline_errors: str = "warn"  # or "refuse"
    by: AbstractBaseUser | None = None  # who imports (None: the command line)
    # Give the files' members (members.csv) their roles on the dataset, to those who hold
    # none there yet. Off unless asked: an import grants no role silently, and a copy made
    # for oneself must not open to everyone who could see the original.
    copy_members: bool = False


@dataclass
class ImportResult:
    dataset: Dataset
    dataset_created: bool = False
    copy_of: str = ""  # imported as a copy: the name in the files' dataset.json
    created: dict[str, int] = field(default_factory=dict)
    updated: dict[str, int] = field(default_factory=dict)
    unchanged: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    granted: list[tuple[str, str]] = field(default_factory=list)  # (username, role) given
    members_not_copied: int = 0  # the files' members, without copy_members

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

    @property
    def roles_granted(self) -> int:
        return len(self.granted)

    def roles_said(self, option: str) -> str:
        """How many roles the import granted to the files' members, in words, for the page,
        the command (and the API's counts): `option` names the way to ask for them there.
        The importer's own admin role on a new dataset is said apart."""
        if self.granted:
            shown = ", ".join(f"{name} ({role})" for name, role in self.granted[:20])
            more = f" and {len(self.granted) - 20} more" if len(self.granted) > 20 else ""
            n = len(self.granted)
            return f"{n} role{'s' if n != 1 else ''} granted to the files' members: {shown}{more}."
        if self.members_not_copied:
            n = self.members_not_copied
            return (
                f"No role granted: the files list {n} member{'s' if n != 1 else ''}, given no "
                f"role ({option} gives them theirs)."
            )
        if self.unchanged.get("members"):
            return "No role granted: every member in the files already had a role here."
        return "No role granted: the files list no members."


# --- reading and checking rows ---------------------------------------------------------

REQUIRED = {
    "guidelines": ("name", "version", "config"),
    "source_types": ("slug", "name"),
    "members": ("username", "role"),
    "queries": ("external_id", "text", "query_date"),
    "checklists": ("query", "author", "status"),
    "groups": ("query", "author", "external_id", "title"),
    "criteria": ("query", "author", "external_id", "text", "kind"),
    "citations": ("query", "author", "criterion", "title"),
    "criterion_checks": ("query", "author", "criterion"),
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
    "pairwise_sessions": ("session", "system_a", "system_b"),
    "pairwise_votes": ("session", "query", "system_a", "system_b", "voter"),
}
CHOICES = {
    ("members", "role"): tuple(r.value for r in roles.DatasetRole),
    ("queries", "status"): tuple(Query.Status.values),
    ("queries", "complexity"): tuple(Query.Complexity.values),
    ("checklists", "status"): tuple(Checklist.Status.values),
    ("checklists", "scoring"): ("", *Scoring.values),
    ("checklists", "undecided"): ("", *Undecided.values),
    ("criteria", "kind"): tuple(Criterion.Kind.values),
    ("judges", "kind"): tuple(Judge.Kind.values),
    ("judges", "token_parameter"): tuple(Judge.TokenParameter.values),
    ("judges", "response_format"): tuple(Judge.ResponseFormat.values),
    ("judges", "reasoning_effort"): tuple(Judge.ReasoningEffort.values),
    ("panels", "method"): tuple(Panel.Method.values),
    ("panels", "conversation"): tuple(Panel.Conversation.values),
    ("runs", "kind"): tuple(Run.Kind.values),
    ("runs", "status"): tuple(Run.Status.values),
    ("runs", "scope"): tuple(Run.Scope.values),
    ("verdicts", "outcome"): tuple(Verdict.Outcome.values),
    ("verdicts", "failure_kind"): ("", *Verdict.FailureKind.values),
    ("grades", "outcome"): tuple(GradedScore.Outcome.values),
    ("labels", "label"): tuple(Label.values),
    ("labels", "source"): tuple(HumanLabel.Source.values),
    ("adjudications", "label"): tuple(Label.values),
    ("pairwise_votes", "voter"): ("reviewer", "judge"),
    ("pairwise_votes", "source"): ("", *PairwiseVote.Source.values),
    ("pairwise_votes", "order"): ("", "ab", "ba"),
    ("pairwise_votes", "outcome"): ("", *PairwiseJudgeVote.Outcome.values),
    ("pairwise_votes", "preference"): ("", *Preference.values),
}
LIMITS = {
    "external_id": 200, "system": 200, "name": 200, "system_version": 100, "version": 100,
    "run_label": 100, "rater": 150, "author": 150, "username": 150, "judge": 100,
    "title": 300, "url": 500, "slug": 100, "panel": 100, "run": 200, "category": 100,
    "previous_version": 200, "session": 200, "system_a": 200, "system_b": 200,
    "system_a_version": 100, "system_b_version": 100, "run_label_a": 100, "run_label_b": 100,
}  # fmt: skip
DATES = {"query_date", "published_on"}
DATETIMES = {
    "first_submitted_at", "submitted_at", "created_at", "updated_at", "decided_at", "finished_at",
    "archived_at", "voted_at",
}  # fmt: skip
# Tables read whole into memory (the structure: thousands of rows); the others are streamed.
SMALL = (
    "guidelines", "source_types", "members", "queries", "checklists", "groups", "criteria",
    "citations", "criterion_checks", "perfect_answers", "systems", "judges", "panels", "runs",
)  # fmt: skip
BIG = ("answers", "verdicts", "grades", "labels", "adjudications")
# The largest tables are read once: checked row by row while they are written, inside the
# import's transaction, which any error rolls back (nothing is committed, as with errors
# found before writing). Reading a million verdicts twice cost a quarter of the import.
CHECKED_WHILE_WRITING = ("verdicts",)


class Errors(list):
    def add(self, message: str) -> None:
        if len(self) < MAX_ERRORS:
            self.append(message)
        elif len(self) == MAX_ERRORS:
            self.append("… more errors not shown; fix these first")


def read_rows(source: Source, table: str, errors: Errors) -> Iterator[tuple[str, int, dict]]:
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
class Plan:
    """What the files say, checked; small tables in memory, big ones counted."""

    meta: dict
    tables: dict[str, list[tuple[str, dict]]] = field(default_factory=dict)
    big: dict[str, int] = field(default_factory=dict)
    usernames: set[str] = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)
    known: Known | None = None
    guideline: Guideline | None = None
    guideline_from_file: tuple[str, int] | None = None


class Known:
    """Keys the import may refer to: those in the files and those already stored."""

    def __init__(self, dataset: Dataset | None) -> None:
        self.queries: set[str] = set()
        self.checklists: set[tuple[str, str]] = set()
        self.criteria: set[CriterionKey] = set()
        self.groups: set[CriterionKey] = set()
        self.group_parents: dict[CriterionKey, str | None] = {}
        self.answers: set[AnswerKey] = set()
        self.runs: set[str] = set()
        self.judges: set[str] = set(Judge.objects.values_list("name", flat=True))
        self.slugs: set[str] = set(SourceType.objects.values_list("slug", flat=True))
        self.stored: StoredKeys | None = None
        if dataset is None:
            return
        stored = self.stored = StoredKeys(dataset)
        self.queries |= set(stored.queries)
        self.checklists |= set(stored.checklists)
        self.criteria |= set(stored.criteria)
        self.groups |= set(stored.groups)
        self.group_parents.update(stored.group_parents)
        self.answers |= set(stored.answers)
        self.runs |= set(stored.runs)


class StoredKeys:
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
        self.groups: dict[CriterionKey, int] = {}
        self.group_parents: dict[CriterionKey, str | None] = {}
        group_rows = CriterionGroup.objects.filter(checklist__query__dataset=dataset).values_list(
            "pk", "checklist_id", "external_id", "parent_id"
        )
        group_keys = {pk: external_id or f"group-{pk}" for pk, _, external_id, _ in group_rows}
        for pk, checklist_id, _, parent_id in group_rows:
            key = (*checklist_keys[checklist_id], group_keys[pk])
            self.groups[key] = pk
            self.group_parents[key] = group_keys.get(parent_id)
        self.answers: dict[AnswerKey, int] = {}
        for pk, query_id, system, version, run_label, sample, checklist_id in (
            Answer.objects.filter(query__dataset=dataset).values_list(
                "pk", "query_id", "system__name", "system__version", "run_label", "sample",
                "checklist_id",
            )
        ):  # fmt: skip
            if checklist_id is not None:
                run_label = perfect_label(checklist_keys[checklist_id][1])
            self.answers[(system, version, by_id[query_id], run_label, sample)] = pk
        runs = list(
            Run.objects.filter(dataset=dataset)
            .order_by("created_at", "pk")
            .values_list("pk", "name")
        )
        names = [name for _, name in runs]
        self.runs: dict[str, int] = {
            (name if name and names.count(name) == 1 else f"run-{pk}"): pk for pk, name in runs
        }


def _target(meta: dict, options: ImportOptions, errors: Errors) -> Dataset | None:
    """The dataset imported into, None for a new one (whose name must be free: NameTaken)."""
    if options.dataset is not None:
        return options.dataset
    copy = bool(options.as_copy)
    problem = import_target.name_error(import_target.new_name(meta, options.as_copy), as_copy=copy)
    if problem:
        errors.add(problem)
    return None


# The dataset settings dataset.json carries as plain values: the name picks the dataset,
# and the guideline, an object (name and version), is read apart.
SETTINGS = tuple(f for f in DATASET_SETTINGS if f not in ("name", "guideline"))


def _check_settings(meta: dict, errors: Errors) -> None:

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


def check(source: Source, options: ImportOptions) -> tuple[Plan, Dataset | None]:
    """Read and check every file; ImportRejected lists every error. Writes nothing."""
    errors = Errors()
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
    if options.dataset is not None and options.as_copy:
        raise ValueError("import into a dataset or as a copy, not both")
    if not any(source.table_file(t) for t in schema.TABLE) and not meta:
        raise ImportRejected(
            [f"{source.path.name}: no dataset.json and no table file (queries.jsonl, "
             "criteria.csv, …) found"]
        )  # fmt: skip
    dataset = _target(meta, options, errors)
    _check_settings(meta, errors)
    plan = Plan(meta=meta)
    known = Known(dataset)
    for table in SMALL:
        plan.tables[table] = [(where, row) for where, _, row in read_rows(source, table, errors)]
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
    plan: Plan, known: Known, dataset: Dataset | None, options: ImportOptions, errors: Errors
) -> None:
    """The small tables, in the order they refer to each other: each row may name only
    what an earlier table (or the database) defines. Errors come in that order."""
    t = plan.tables
    guideline_keys = _check_guidelines(plan, options, errors)
    _check_source_types(t["source_types"], known, errors)
    if options.copy_members:  # otherwise nobody is made for members.csv alone
        for _, row in t["members"]:
            plan.usernames.add(row["username"])
    once = _Once(errors)
    _check_queries(t["queries"], plan, known, once)
    _check_checklists(t["checklists"], plan, known, guideline_keys, once, errors)
    _check_groups(t["groups"], known, once, errors)
    _check_criteria(t["criteria"], known, once, errors)
    _check_rubrics(plan, known, dataset, errors)
    _check_previous_versions(t["criteria"], known, errors)
    _check_citations(t["citations"], known, errors)
    _check_criterion_checks(t["criterion_checks"], known, once, errors)
    _check_perfect_answers(t["perfect_answers"], plan, known, once, errors)
    _check_judges_panels_and_runs(t, known, once, errors)
    _check_guideline(plan, errors, options)


class _Once:
    """Whether a key is met for the first time; a second row with the same key is an error
    naming the first one's place."""

    def __init__(self, errors: Errors) -> None:
        self.errors = errors
        self.seen: dict[Any, str] = {}

    def __call__(self, key: Any, where: str, what: str) -> bool:
        if key in self.seen:
            self.errors.add(f"{where}: same {what} as {self.seen[key]}; one row each")
            return False
        self.seen[key] = where
        return True


Rows = list[tuple[str, dict]]


def _check_guidelines(plan: Plan, options: ImportOptions, errors: Errors) -> set[tuple[str, int]]:
    """Guidelines: a stored version with the same name and number must hold the same rules.
    Sets the dataset's guideline; returns every (name, version) rows may name."""
    stored = {(g.name, g.version): g for g in Guideline.objects.all()}
    file_guidelines: set[tuple[str, int]] = set()
    for where, row in plan.tables["guidelines"]:
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
    return guideline_keys


def _check_source_types(rows: Rows, known: Known, errors: Errors) -> None:
    """New slugs are created; a new slug may not take an existing name."""
    names = dict(SourceType.objects.values_list("name", "slug"))
    for where, row in rows:
        if row["slug"] not in known.slugs and names.get(row["name"], row["slug"]) != row["slug"]:
            errors.add(
                f"{where}: field 'name': source type {row['name']!r} exists here with slug "
                f"{names[row['name']]!r}"
            )
        known.slugs.add(row["slug"])


def _check_queries(rows: Rows, plan: Plan, known: Known, once: _Once) -> None:
    for where, row in rows:
        if once(("q", row["external_id"]), where, "query external_id"):
            known.queries.add(row["external_id"])
        plan.usernames.update(row["assigned_experts"] or [])
        if row["created_by"]:
            plan.usernames.add(row["created_by"])


def _check_checklists(
    rows: Rows,
    plan: Plan,
    known: Known,
    guideline_keys: set[tuple[str, int]],
    once: _Once,
    errors: Errors,
) -> None:
    for where, row in rows:
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


def _check_groups(rows: Rows, known: Known, once: _Once, errors: Errors) -> None:
    """Each group's checklist exists, its weight is positive, its parent is a group of the
    same checklist and the parents form no cycle (evaluation.metrics.rubrics.Tree)."""
    parents = dict(known.group_parents)
    wheres: dict[tuple[str, str, str], str] = {}
    for where, row in rows:
        key = (row["query"], row["author"], row["external_id"])
        if (row["query"], row["author"]) not in known.checklists:
            errors.add(f"{where}: field 'author': no checklist of {row['author']!r} for query "
                       f"{row['query']!r} in checklists or the dataset")  # fmt: skip
            continue
        if row["weight"] is not None and not 0 < row["weight"] < 10_000:
            errors.add(f"{where}: field 'weight': a group's weight must be positive (above 0 "
                       "and below 10000)")  # fmt: skip
        if once(("g", key), where, "query, author and external_id"):
            known.groups.add(key)
            parents[key] = row["parent"] or None
            wheres[key] = where
    by_checklist: dict[tuple[str, str], list[rubrics.Group]] = {}
    for (query, author, external_id), parent in parents.items():
        by_checklist.setdefault((query, author), []).append(rubrics.Group(external_id, parent))
    for (query, author), groups in by_checklist.items():
        try:
            rubrics.Tree.of(groups)
        except rubrics.TreeError as exc:
            where = wheres.get((query, author, exc.group), f"groups ({query}, {author})")
            if exc.field == "parent" and "is not a group" in str(exc):
                parent = parents[(query, author, exc.group)]
                errors.add(f"{where}: field 'parent': no group {parent!r} in the same "
                           "checklist (a parent must be in the group's checklist)")  # fmt: skip
            else:
                errors.add(f"{where}: field {exc.field!r}: {exc}")


def _check_rubrics(plan: Plan, known: Known, dataset: Dataset | None, errors: Errors) -> None:
    """Each criterion as the import leaves the dataset (the files' rows, and the stored
    criteria they do not replace) can be scored by its checklist's strategy as the import
    leaves it (its own, else dataset.json's, else the dataset's): annotation.scoring, the
    check the settings page, the API and the editor run. Two queries when importing into a
    dataset, none for a new one."""
    default = plan.meta.get("scoring") or (dataset.scoring if dataset is not None else "")
    own: dict[tuple[str, str], str] = {}
    stored = known.stored
    if stored is not None:
        keys = {pk: key for key, pk in stored.checklists.items()}
        for pk, checklist_scoring in Checklist.objects.filter(pk__in=keys).values_list(
            "pk", "scoring"
        ):
            own[keys[pk]] = checklist_scoring
    for _, row in plan.tables["checklists"]:
        own[row["query"], row["author"]] = row["scoring"] or ""

    def check(where: str, query: str, author: str, weight: scoring.Weight) -> None:
        strategy = scoring.strategy_of(default, own.get((query, author), ""))
        try:
            scoring.validate_scoring(strategy, [(where, weight)], field="weight")
        except scoring.ScoringRefused as exc:
            errors.add(f"{where}: field 'weight': {exc.problem} (checklist of {author!r} for "
                       f"query {query!r})")  # fmt: skip

    in_files: set[CriterionKey] = set()
    for where, row in plan.tables["criteria"]:
        in_files.add((row["query"], row["author"], row["external_id"]))
        check(where, row["query"], row["author"], 1 if row["weight"] is None else row["weight"])
    if stored is None:
        return
    weights = dict(
        Criterion.objects.filter(pk__in=stored.criteria.values()).values_list("pk", "weight")
    )
    for (query, author, external_id), pk in stored.criteria.items():
        if (query, author, external_id) not in in_files:
            where = f"criterion {external_id!r} already in the dataset"
            check(where, query, author, weights[pk])


def _check_criteria(rows: Rows, known: Known, once: _Once, errors: Errors) -> None:
    for where, row in rows:
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
        if row["weight"] is not None and not -10_000 < row["weight"] < 10_000:
            errors.add(f"{where}: field 'weight' must be from -9999.99 to 9999.99")
        if row["group"] and (row["query"], row["author"], row["group"]) not in known.groups:
            errors.add(f"{where}: field 'group': no group {row['group']!r} in the checklist "
                       f"of {row['author']!r} for query {row['query']!r}")  # fmt: skip
        if once(("k", key), where, "query, author and external_id"):
            known.criteria.add(key)


def _check_citations(rows: Rows, known: Known, errors: Errors) -> None:
    for where, row in rows:
        if (row["query"], row["author"], row["criterion"]) not in known.criteria:
            errors.add(f"{where}: field 'criterion': no criterion {row['criterion']!r} of "
                       f"{row['author']!r} for query {row['query']!r}")  # fmt: skip
        if row["source_type"] and row["source_type"] not in known.slugs:
            errors.add(f"{where}: field 'source_type': no source type {row['source_type']!r}")


def _check_criterion_checks(rows: Rows, known: Known, once: _Once, errors: Errors) -> None:
    """Each check names a criterion of the file or the dataset, at most once, with a known
    evidence mode and parameters its kind accepts (evaluation.checks.trajectory)."""
    for where, row in rows:
        key = (row["query"], row["author"], row["criterion"])
        if key not in known.criteria:
            errors.add(f"{where}: field 'criterion': no criterion {row['criterion']!r} of "
                       f"{row['author']!r} for query {row['query']!r}")  # fmt: skip
            continue
        if not once(("criterion_checks", key), where, "criterion"):
            continue
        if row["evidence"] not in ("", *EVIDENCE):
            errors.add(f"{where}: field 'evidence' must be one of context, reference or empty")
        if row["kind"]:
            threshold = row["threshold"]
            for problem in trajectory.check_params(row["kind"], row["params"] or {}, threshold):
                field = "threshold" if problem.startswith("threshold") else "params"
                field = "kind" if problem.startswith("kind") else field
                errors.add(f"{where}: field {field!r}: {problem}")
        elif row["params"]:
            errors.add(f"{where}: field 'params': parameters without a check kind")


EVIDENCE = ("context", "reference")


def _check_perfect_answers(
    rows: Rows, plan: Plan, known: Known, once: _Once, errors: Errors
) -> None:
    for where, row in rows:
        key = (row["query"], row["author"])
        if key not in known.checklists:
            errors.add(f"{where}: field 'author': no checklist of {row['author']!r} for query "
                       f"{row['query']!r}")  # fmt: skip
            continue
        if once(("p", key), where, "query and author"):
            known.answers.add((REFERENCE_SYSTEM, "", row["query"], perfect_label(row["author"]), 0))
        if row["written_by"]:
            plan.usernames.add(row["written_by"])


def _judge_tuning_problems(row: dict[str, Any]) -> list[str]:
    """A judge's tuning and call settings, checked as the judge form checks them."""
    problems = []
    if row["instructions"] is not None:
        problems += [
            f"field 'instructions': {p}" for p in tuning.instructions_problems(row["instructions"])
        ]
    if row["examples"] is not None:
        problems += [f"field 'examples': {p}" for p in tuning.examples_problems(row["examples"])]
    per_call = row["criteria_per_call"]
    if per_call is not None and not 0 <= per_call <= batched.MAX_CRITERIA_PER_CALL:
        problems.append(
            f"field 'criteria_per_call' must be from 0 to {batched.MAX_CRITERIA_PER_CALL}"
        )
    versions = row["versions"]
    if versions is None:
        return problems
    if not isinstance(versions, list):
        return [*problems, "field 'versions': a list of {version, instructions, examples}"]
    seen: set[str] = set()
    for n, v in enumerate(versions, 1):
        name = v.get("version") if isinstance(v, dict) else None
        if not isinstance(name, str) or not 0 < len(name) <= 80 or name in seen:
            problems.append(f"field 'versions': version {n} needs a name of its own (at most 80)")
            continue
        seen.add(name)
        if tuning.digest(v.get("instructions") or "", v.get("examples") or []) not in name:
            problems.append(
                f"field 'versions': {name} does not match its instructions and examples"
            )
        inner = tuning.instructions_problems(v.get("instructions") or "")
        inner += tuning.examples_problems(v.get("examples") or [])
        problems += [f"field 'versions': {name}: {p}" for p in inner]
    return problems


def _check_judges_panels_and_runs(
    t: dict[str, Rows], known: Known, once: _Once, errors: Errors
) -> None:
    """A panel names judges of the files or of this installation; a run names a panel."""
    for where, row in t["judges"]:
        if once(("j", row["name"]), where, "judge name"):
            known.judges.add(row["name"])
        for problem in _judge_tuning_problems(row):
            errors.add(f"{where}: {problem}")
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
        if row["expected"] is not None and not 0 <= row["expected"] <= MAX_EXPECTED:
            errors.add(f"{where}: field 'expected' must be from 0 to {MAX_EXPECTED}")
        if row["panel"] not in panels:
            errors.add(f"{where}: field 'panel': no panel {row['panel']!r}")
            continue
        if once(("r", row["run"]), where, "run"):
            known.runs.add(row["run"])


def _check_previous_versions(rows: list[tuple[str, dict]], known: Known, errors: Errors) -> None:
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


def _check_guideline(plan: Plan, errors: Errors, options: ImportOptions) -> None:
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
        # dataset.json names none: the guideline the dataset will be held to, the target
        # dataset's own, else the default, named with where it comes from, so that a file
        # that never mentioned "Finance" is not told it breaks it without a reason.
        target = options.dataset if options.dataset is not None else Dataset()
        chosen = guideline_rules.guideline_for(target)
        config = guideline_rules.config_of(chosen)
        if chosen is None:
            label = "the built-in finance rules (dataset.json names no guideline)"
        elif target.guideline_id:
            label = f"{chosen}, the guideline of dataset {target.name!r}"
        else:
            label = f"{chosen} (the default guideline: dataset.json names none)"
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
        # Built as the editor builds its input (notes included), so an override the editor
        # accepts is honoured here too.
        criteria[key[:2]].append(
            guideline_rules.criterion_values_input(
                key=row["external_id"], text=row["text"], kind=row["kind"], notes=row["notes"],
                source_types=row["source_types"] or (), citations=citations[key],
                weight=row["weight"] if row["weight"] is not None else 1,
                in_group=bool(row["group"]),
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


def _check_big(source: Source, table: str, plan: Plan, known: Known, errors: Errors) -> int:
    """Check a streamed table row by row; nothing of it is kept but the count (and, for
    answers, their keys: verdicts and labels may name them)."""
    count = 0
    for where, _, row in read_rows(source, table, errors):
        count += 1
        check_big_row(where, table, row, plan, known, errors)
    return count


def check_big_row(
    where: str, table: str, row: dict, plan: Plan, known: Known, errors: Errors
) -> bool:
    """Check one row of a big table against the keys known; False when it has an error."""
    found: list[str] = []
    if table == "answers":
        key = answer_key(row)
        if row["query"] not in known.queries:
            found.append(f"{where}: field 'query': no query {row['query']!r}")
        elif row["run_label"].startswith("perfect:") or row["system"] == REFERENCE_SYSTEM:
            found.append(f"{where}: field 'system': perfect answers go in perfect_answers")
        else:
            known.answers.add(key)
        found.extend(f"{where}: {p}" for p in agent_fields.check_fields(row)[1])
        return _report(found, errors)
    answer = answer_key(row)
    if answer not in known.answers:
        found.append(
            f"{where}: field 'system': no answer of {row['system']!r} "
            f"{row['system_version']!r} to query {row['query']!r} with run label "
            f"{row['run_label']!r} and sample {answer[4]} in answers or the dataset"
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
        _check_judged(where, row, known, found)
    elif table == "labels":
        if row["reviewer"]:
            plan.usernames.add(row["reviewer"])
    elif row["decided_by"]:
        plan.usernames.add(row["decided_by"])
    return _report(found, errors)


def _report(found: list[str], errors: Errors) -> bool:
    for message in found:
        errors.add(message)
    return not found


def _check_judged(where: str, row: dict, known: Known, found: list[str]) -> None:
    """What a verdict and a grade row share: a known run and judge, a sample in range."""
    if row["run"] not in known.runs:
        found.append(f"{where}: field 'run': no run {row['run']!r} in runs or the dataset")
    if row["judge"] not in known.judges:
        found.append(f"{where}: field 'judge': no judge {row['judge']!r}")
    if row["sample"] is not None and not 0 <= row["sample"] <= 1000:
        found.append(f"{where}: field 'sample' must be from 0 to 1000")


def _check_grade(where: str, row: dict, known: Known, found: list[str]) -> None:
    _check_judged(where, row, known, found)
    if row["score"] is not None and not 1 <= row["score"] <= 5:
        found.append(f"{where}: field 'score' must be from 1 to 5")
    elif (row["score"] is None) == (row["outcome"] == GradedScore.Outcome.SCORED):
        found.append(f"{where}: field 'score' is given exactly when the outcome is scored")
