"""Importing judge verdicts and human labels produced outside the workbench, from JSONL or
CSV. Same contract as the answers import (evaluation/answers/upload.py): every row is checked
before anything is written, then all rows are written in one transaction, or none; each
error names the file, the line and the field; importing the same file again changes nothing.

An item is an (answer, criterion). The answer is given by `answer` (its id), or by `system`
(+ `system_version`) and either `external_id` (the answer's) or `query` (+ `run_label`
and `sample`, 0 when left out).
`query` is the query's external id, as exports write it and the reward API takes it (a
number that is no query's external id is read as the query's id in the app, as older files
gave it). A query named by its external id has that id fixed from then on ("labels" or
"verdicts", annotation.query_ids). The criterion by `criterion` (its id); it must belong
to a submitted checklist of the answer's query.

Verdict rows add `judge` (a name), `outcome` (pass / fail / unparseable / error) and
optionally `sample` (default 0), `rationale`, `failure_kind`. They go into one run of kind
"imported" of the dataset, named by the caller, graded by a panel (by name): judges are
created as external judges, and a missing panel is created with those judges and the
majority method, so the panel's aggregation is computed over the imported votes.

Label rows add `rater` (a name), `label` (pass / fail) and optionally `note`. Each becomes
a HumanLabel with source "import"; its reviewer is the user of that username when they
are a member of the dataset.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from annotation import roles
from annotation.access import dataset_permissions
from annotation.models import Checklist, Criterion, Dataset, Query
from annotation.services import external_ids_fix
from config import limits
from config.ids import is_id
from evaluation.answers.models import Answer
from evaluation.answers.upload import decode_upload, parse_sample, read_rows
from evaluation.judges.models import Judge, Panel, PanelMember
from evaluation.kept.events import Event, bump
from evaluation.labels.models import HumanLabel, Label
from evaluation.runs import snapshot
from evaluation.runs.models import Run, Verdict
from evaluation.tables.rows import Checked, ImportRejected, check_rows, field_text

__all__ = [
    "ImportRejected",
    "LabelsResult",
    "VerdictsResult",
    "import_labels",
    "import_labels_file",
    "import_verdicts",
    "import_verdicts_file",
]

OUTCOMES = tuple(Verdict.Outcome.values)
LABELS = tuple(Label.values)
FAILURE_KINDS = tuple(Verdict.FailureKind.values)


@dataclass(frozen=True)
class LabelsResult:
    created: int
    updated: int
    unchanged: int
    raters: int
    linked_to_users: int  # raters whose name is the username of a member of the dataset


@dataclass(frozen=True)
class VerdictsResult:
    run_id: int
    run_created: bool
    panel_created: bool
    judges_created: int
    created: int
    updated: int
    unchanged: int


@dataclass(frozen=True)
class _Item:
    answer_id: int
    criterion_id: int
    named_query: int | None = None  # the query, when the row named it by its external id


class _Resolver:
    """Finds answers and criteria of one dataset from row fields, with three queries in all."""

    def __init__(self, dataset: Dataset) -> None:
        self.query_ids: dict[str, int] = dict(
            Query.objects.filter(dataset=dataset).values_list("external_id", "pk")
        )
        self.query_pks = set(self.query_ids.values())
        self.answers: dict[int, tuple[int, str, str, str, int, str]] = {
            pk: (query_id, system, version, run_label, sample, external_id)
            for pk, query_id, system, version, run_label, sample, external_id in (
                Answer.objects.filter(query__dataset=dataset).values_list(
                    "pk",
                    "query_id",
                    "system__name",
                    "system__version",
                    "run_label",
                    "sample",
                    "external_id",
                )
            )
        }
        # Keyed with the system's version, and with None for rows that leave it out (then
        # the name must be unambiguous among the dataset's answers).
        self.by_query: dict[tuple[str, str | None, int, str, int], list[int]] = {}
        self.by_external: dict[tuple[str, str | None, str], list[int]] = {}
        for pk, (query_id, system, version, run_label, sample, external_id) in self.answers.items():
            for v in (version, None):
                key = (system, v, query_id, run_label, sample)
                self.by_query.setdefault(key, []).append(pk)
                if external_id:
                    self.by_external.setdefault((system, v, external_id), []).append(pk)
        self.criteria: dict[int, int] = dict(
            Criterion.objects.filter(
                checklist__query__dataset=dataset, checklist__status=Checklist.Status.SUBMITTED
            ).values_list("pk", "checklist__query_id")
        )

    def item(self, row: dict, where: str, errors: list[str]) -> _Item | None:
        answer_id, named_query = self._answer(row, where, errors)
        criterion = field_text(row, "criterion")
        if not criterion:
            errors.append(f"{where}: field 'criterion' is required")
            return None
        if not is_id(criterion) or int(criterion) not in self.criteria:
            errors.append(
                f"{where}: field 'criterion': no criterion {criterion!r} in a submitted "
                "checklist of this dataset"
            )
            return None
        if answer_id is None:
            return None
        if self.criteria[int(criterion)] != self.answers[answer_id][0]:
            errors.append(
                f"{where}: field 'criterion': criterion {criterion} belongs to another query "
                f"than answer {answer_id}"
            )
            return None
        return _Item(answer_id, int(criterion), named_query)

    def query(self, value: str) -> tuple[int | None, bool]:
        """The query a row's `query` names: by external id, else (older files) by its id in
        the app; and whether it was named by its external id."""
        if value in self.query_ids:
            return self.query_ids[value], True
        if is_id(value) and int(value) in self.query_pks:
            return int(value), False
        return None, False

    def _answer(self, row: dict, where: str, errors: list[str]) -> tuple[int | None, int | None]:
        answer = field_text(row, "answer")
        if answer:
            if not is_id(answer) or int(answer) not in self.answers:
                errors.append(f"{where}: field 'answer': no answer {answer!r} in this dataset")
                return None, None
            return int(answer), None
        system, version = field_text(row, "system"), field_text(row, "system_version") or None
        if not system:
            errors.append(
                f"{where}: field 'answer' is required (or 'system' with 'query' or 'external_id')"
            )
            return None, None
        external_id, query = field_text(row, "external_id"), field_text(row, "query")
        named = None
        if external_id:
            found = self.by_external.get((system, version, external_id), [])
            field, what = "external_id", f"with external id {external_id!r}"
        elif not query:
            errors.append(f"{where}: field 'query' is required with 'system' (or 'external_id')")
            return None, None
        else:
            query_id, by_external_id = self.query(query)
            if query_id is None:
                errors.append(
                    f"{where}: field 'query': no query with external id {query!r} in this dataset"
                )
                return None, None
            named = query_id if by_external_id else None
            run_label = field_text(row, "run_label")
            sample, problem = parse_sample(row.get("sample"))
            if problem:
                errors.append(f"{where}: field 'sample' {problem}")
                return None, None
            found = self.by_query.get((system, version, query_id, run_label, sample), [])
            field = "query"
            what = f"to query {query!r} with run label {run_label!r} and sample {sample}"
        if len(found) == 1:
            return found[0], named
        if found:
            errors.append(
                f"{where}: field 'system_version': {len(found)} answers of system {system!r} "
                f"{what}; give the system's version"
            )
        else:
            errors.append(f"{where}: field {field!r}: no answer of system {system!r} {what}")
        return None, None


def _rows(name: str, content: str) -> list[tuple[int, dict]]:
    raw = read_rows(name, content)
    if not raw:
        raise ImportRejected([f"{name}: no rows"])
    return raw


# --- human labels ---------------------------------------------------------------------


@dataclass(frozen=True)
class _LabelRow:
    line: int
    item: _Item
    rater: str
    label: str
    note: str


def _check_labels(name: str, raw: list[tuple[int, dict]], dataset: Dataset) -> list[_LabelRow]:
    resolver = _Resolver(dataset)
    return check_rows(
        name,
        raw,
        lambda line, row, where: _check_label(line, row, where, resolver),
        duplicate="same item and rater as line {line}; one label each",
    )


def _check_label(
    line: int, row: dict, where: str, resolver: _Resolver
) -> Checked[_LabelRow] | list[str]:
    problems: list[str] = []
    item = resolver.item(row, where, problems)
    rater, label = field_text(row, "rater"), field_text(row, "label").lower()
    if not rater:
        problems.append(f"{where}: field 'rater' is required")
    elif len(rater) > 150:
        problems.append(f"{where}: field 'rater' is longer than 150 characters")
    if label not in LABELS:
        problems.append(f"{where}: field 'label' must be one of {', '.join(LABELS)}")
    if len(field_text(row, "note")) > limits.REVIEW_NOTE:
        problems.append(f"{where}: field 'note' is longer than {limits.REVIEW_NOTE} characters")
    if problems or item is None:
        return problems
    return Checked(
        _LabelRow(line, item, rater, label, field_text(row, "note")),
        (item.answer_id, item.criterion_id, rater),
    )


def _members_by_username(dataset: Dataset, names: Iterable[str]) -> dict[str, object]:
    users = get_user_model().objects.filter(username__in=set(names), is_active=True)
    return {
        user.get_username(): user
        for user in users
        if roles.VIEW in dataset_permissions(user, dataset)
    }


def import_label_rows(*, dataset: Dataset, name: str, raw: list[tuple[int, dict]]) -> LabelsResult:
    """Check then write already-parsed rows ((line, dict) pairs), in one transaction."""
    rows = _check_labels(name, raw, dataset)
    with transaction.atomic():
        members = _members_by_username(dataset, (r.rater for r in rows))
        existing = {
            (label.answer_id, label.criterion_id, label.rater): label
            for label in HumanLabel.objects.filter(
                answer__query__dataset=dataset, rater__in={r.rater for r in rows}
            )
        }
        new: list[HumanLabel] = []
        changed: list[HumanLabel] = []
        for row in rows:
            reviewer = members.get(row.rater)
            label = existing.get((row.item.answer_id, row.item.criterion_id, row.rater))
            if label is None:
                new.append(
                    HumanLabel(
                        answer_id=row.item.answer_id,
                        criterion_id=row.item.criterion_id,
                        rater=row.rater,
                        reviewer=reviewer,
                        label=row.label,
                        note=row.note,
                        source=HumanLabel.Source.IMPORT,
                    )
                )
            elif (label.label, label.note, label.reviewer_id) != (
                row.label,
                row.note,
                getattr(reviewer, "pk", None),
            ):
                label.label, label.note, label.reviewer = row.label, row.note, reviewer
                label.updated_at = timezone.now()
                changed.append(label)
        HumanLabel.objects.bulk_create(new, batch_size=500)
        HumanLabel.objects.bulk_update(
            changed, ["label", "note", "reviewer", "updated_at"], batch_size=500
        )
        if new or changed:
            bump(dataset.pk, Event.LABELS_IMPORTED)
        _fix_named_queries(rows, "labels")
    return LabelsResult(
        created=len(new),
        updated=len(changed),
        unchanged=len(rows) - len(new) - len(changed),
        raters=len({r.rater for r in rows}),
        linked_to_users=len(members),
    )


def _fix_named_queries(rows: Iterable[_LabelRow | _VerdictRow], by: str) -> None:
    """The file names these queries by their external ids: fixed from now on."""
    named = {row.item.named_query for row in rows} - {None}
    if named:
        external_ids_fix(queries=Query.objects.filter(pk__in=named), by=by)


def import_labels(*, dataset: Dataset, name: str, content: str) -> LabelsResult:
    return import_label_rows(dataset=dataset, name=name, raw=_rows(name, content))


def import_labels_file(*, dataset: Dataset, path: Path) -> LabelsResult:
    return import_labels(dataset=dataset, name=path.name, content=_read(path))


def _read(path: Path) -> str:
    try:
        return decode_upload(path.name, path.read_bytes())
    except OSError as exc:
        raise ImportRejected([f"{path.name}: cannot be read ({exc})"]) from exc


# --- judge verdicts -------------------------------------------------------------------


@dataclass(frozen=True)
class _VerdictRow:
    line: int
    item: _Item
    judge: str
    sample: int
    outcome: str
    failure_kind: str
    rationale: str


def _check_verdicts(
    name: str, raw: list[tuple[int, dict]], dataset: Dataset, judges: dict[str, Judge]
) -> list[_VerdictRow]:
    resolver = _Resolver(dataset)
    return check_rows(
        name,
        raw,
        lambda line, row, where: _check_verdict(line, row, where, resolver, judges),
        duplicate="same item, judge and sample as line {line}; one verdict each",
    )


def _check_verdict(
    line: int, row: dict, where: str, resolver: _Resolver, judges: dict[str, Judge]
) -> Checked[_VerdictRow] | list[str]:
    problems: list[str] = []
    item = resolver.item(row, where, problems)
    judge, outcome = field_text(row, "judge"), field_text(row, "outcome").lower()
    sample, failure_kind = field_text(row, "sample") or "0", field_text(row, "failure_kind").lower()
    if not judge:
        problems.append(f"{where}: field 'judge' is required")
    elif len(judge) > 100:
        problems.append(f"{where}: field 'judge' is longer than 100 characters")
    elif judge in judges and judges[judge].kind != Judge.Kind.EXTERNAL:
        problems.append(
            f"{where}: field 'judge': {judge!r} is an existing {judges[judge].kind} judge; "
            "imported verdicts need an external judge (use another name)"
        )
    if outcome not in OUTCOMES:
        problems.append(f"{where}: field 'outcome' must be one of {', '.join(OUTCOMES)}")
    if not is_id(sample) or int(sample) > 1000:
        problems.append(f"{where}: field 'sample' must be a whole number from 0 to 1000")
    if failure_kind and failure_kind not in FAILURE_KINDS:
        problems.append(
            f"{where}: field 'failure_kind' must be empty or one of {', '.join(FAILURE_KINDS)}"
        )
    if problems or item is None:
        return problems
    verdict = _VerdictRow(
        line, item, judge, int(sample), outcome, failure_kind, field_text(row, "rationale")
    )
    return Checked(verdict, (item.answer_id, item.criterion_id, judge, int(sample)))


def import_verdict_rows(
    *, dataset: Dataset, name: str, raw: list[tuple[int, dict]], panel: str, run_name: str = ""
) -> VerdictsResult:
    """Check every row, then write them as the verdicts of one imported run of the panel
    `panel` (made, with external judges, when it does not exist), in one transaction.
    Importing the same rows again changes nothing."""
    panel_name = panel.strip()
    run_name = run_name.strip() or f"Imported verdicts ({panel_name})"
    if not panel_name:
        raise ImportRejected([f"{name}: a panel name is required"])
    judge_names = {field_text(row, "judge") for _, row in raw} - {""}
    judges = {j.name: j for j in Judge.objects.filter(name__in=judge_names)}
    rows = _check_verdicts(name, raw, dataset, judges)
    existing_panel, run = _check_panel_and_run(name, rows, dataset, panel_name, run_name)
    with transaction.atomic():
        judges_created = _add_external_judges(rows, judges)
        panel_obj = existing_panel or Panel.objects.create(
            name=panel_name,
            method=Panel.Method.MAJORITY,
            description="Created by a verdicts import.",
        )
        _add_members(panel_obj, rows, judges)
        now = timezone.now()
        run_created = run is None
        if run is None:
            run = Run.objects.create(
                dataset=dataset,
                panel=panel_obj,
                kind=Run.Kind.IMPORTED,
                name=run_name,
                status=Run.Status.DONE,
                started_at=now,
                finished_at=now,
                snapshot=snapshot.take(panel_obj),
            )
        new, changed = _write_verdicts(run, rows, judges, name, now)
        if new or changed:  # a repeated import leaves the run as it was
            run.expected = Verdict.objects.filter(run=run).count()
            run.status, run.finished_at = Run.Status.DONE, now
            run.snapshot = snapshot.take(panel_obj)  # the panel may have gained judges
            run.save(update_fields=["expected", "status", "finished_at", "snapshot"])
        _fix_named_queries(rows, "verdicts")
    return VerdictsResult(
        run_id=run.pk,
        run_created=run_created,
        panel_created=existing_panel is None,
        judges_created=judges_created,
        created=len(new),
        updated=len(changed),
        unchanged=len(rows) - len(new) - len(changed),
    )


def _check_panel_and_run(
    name: str, rows: list[_VerdictRow], dataset: Dataset, panel_name: str, run_name: str
) -> tuple[Panel | None, Run | None]:
    """The panel and the imported run the rows go to, if they exist. A panel of judges that
    are not external takes no new judge; a run holds the verdicts of one panel."""
    existing_panel = (
        Panel.objects.filter(name=panel_name).prefetch_related("members__judge").first()
    )
    if existing_panel is not None:
        members = {m.judge.name: m for m in existing_panel.members.all()}
        outside = sorted({r.judge for r in rows} - set(members))
        if outside and any(m.judge.kind != Judge.Kind.EXTERNAL for m in members.values()):
            raise ImportRejected(
                [
                    f"{name}: panel {panel_name!r} has judges that are not external and does "
                    f"not include {', '.join(outside)}; name another panel"
                ]
            )
    run = Run.objects.filter(dataset=dataset, kind=Run.Kind.IMPORTED, name=run_name).first()
    if run is not None and (existing_panel is None or run.panel_id != existing_panel.pk):
        raise ImportRejected(
            [f"{name}: run {run_name!r} holds verdicts of another panel; name another run"]
        )
    return existing_panel, run


def _add_external_judges(rows: list[_VerdictRow], judges: dict[str, Judge]) -> int:
    """An external judge for each judge name the rows use and this installation lacks."""
    created = 0
    for judge_name in sorted({r.judge for r in rows}):
        if judge_name not in judges:
            judges[judge_name] = Judge.objects.create(
                name=judge_name, kind=Judge.Kind.EXTERNAL, model=""
            )
            created += 1
    return created


def _add_members(panel: Panel, rows: list[_VerdictRow], judges: dict[str, Judge]) -> None:
    """Every judge of the rows is a member, with as many samples as its rows number."""
    samples: dict[str, int] = {}
    for row in rows:
        samples[row.judge] = max(samples.get(row.judge, 0), row.sample + 1)
    present = {m.judge.name: m for m in panel.members.select_related("judge")}
    for judge_name, count in sorted(samples.items()):
        member = present.get(judge_name)
        if member is None:
            PanelMember.objects.create(panel=panel, judge=judges[judge_name], samples=count)
        elif member.samples < count:
            member.samples = count
            member.save(update_fields=["samples"])


def _write_verdicts(
    run: Run, rows: list[_VerdictRow], judges: dict[str, Judge], name: str, now
) -> tuple[list[Verdict], list[Verdict]]:
    """The rows as the run's verdicts: new ones created, differing ones updated (the rest
    left alone, `updated_at` included); returns (created, updated)."""
    existing = {
        (v.answer_id, v.criterion_id, v.judge_id, v.sample): v
        for v in Verdict.objects.filter(run=run)
    }
    new: list[Verdict] = []
    changed: list[Verdict] = []
    for row in rows:
        judge = judges[row.judge]
        values = {
            "outcome": row.outcome,
            "failure_kind": row.failure_kind if row.outcome == "fail" else "",
            "rationale": row.rationale,
        }
        verdict = existing.get((row.item.answer_id, row.item.criterion_id, judge.pk, row.sample))
        if verdict is None:
            new.append(
                Verdict(
                    run=run,
                    answer_id=row.item.answer_id,
                    criterion_id=row.item.criterion_id,
                    judge=judge,
                    sample=row.sample,
                    cache_key="",
                    judge_params={"imported_from": name},
                    **values,
                )
            )
        elif any(getattr(verdict, k) != v for k, v in values.items()):
            for k, v in values.items():
                setattr(verdict, k, v)
            verdict.updated_at = now
            changed.append(verdict)
    Verdict.objects.bulk_create(new, batch_size=500)
    Verdict.objects.bulk_update(
        changed, ["outcome", "failure_kind", "rationale", "updated_at"], batch_size=500
    )
    return new, changed


def import_verdicts(
    *, dataset: Dataset, name: str, content: str, panel: str, run_name: str = ""
) -> VerdictsResult:
    return import_verdict_rows(
        dataset=dataset, name=name, raw=_rows(name, content), panel=panel, run_name=run_name
    )


def import_verdicts_file(
    *, dataset: Dataset, path: Path, panel: str, run_name: str = ""
) -> VerdictsResult:
    return import_verdicts(
        dataset=dataset, name=path.name, content=_read(path), panel=panel, run_name=run_name
    )
