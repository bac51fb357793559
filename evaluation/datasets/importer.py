"""Importing a dataset from the export layout (a zip or a folder of table files): into the
dataset the caller chose, or as a new dataset, never into one it did not name
(evaluation.datasets.import_target); its queries, checklists, criteria, citations, perfect
answers, answers, runs, verdicts, labels and adjudications, matched by external keys. See
docs/data-formats.md#dataset-import.

Two phases. First every file is read and every row checked, against what the files define
and what the database already holds, and nothing is written: any error rejects the import
with every error listed as `file:line: field 'name': problem` (evaluation.datasets.import_checks,
which returns the `Plan` written here). Then everything is written in
one transaction (structure through the ORM; answers, verdicts, labels and adjudications
through bulk upserts, evaluation.datasets.bulk), so a row that still fails there (a duplicate)
rolls it all back. Importing the same files again into the dataset they made (or a
dataset's export back into it) changes nothing, not a row: every row is matched by its key
and rewritten only when it differs, and only what was created or changed gets a history
entry or moves the kept figures' counters. An import never deletes anything.

Imports of the same dataset are serialised (an advisory lock on PostgreSQL, the database
lock on SQLite), so two at once give the result of one after the other.
"""

from __future__ import annotations

import hashlib
import logging
from collections import defaultdict
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.db import DatabaseError, connection, transaction
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts.services import dataset_role, role_set
from annotation import roles
from annotation.models import (
    Checklist,
    ChecklistEvent,
    Citation,
    Criterion,
    CriterionGroup,
    Dataset,
    DomainTag,
    Guideline,
    Query,
    QueryCategory,
    SourceType,
)
from annotation.services import dataset_set_role, external_ids_fix
from annotation.services.checklists import snapshots
from audit.models import RoleChange
from evaluation.answers import agent_fields
from evaluation.answers.models import Answer, System
from evaluation.checks.models import CriterionCheck
from evaluation.cross_evaluation.services import reference_system
from evaluation.cross_evaluation.services import run_label as perfect_run_label
from evaluation.datasets import bulk, pairwise_tables, storage
from evaluation.datasets.import_checks import (
    SETTINGS,
    Errors,
    ImportOptions,
    ImportResult,
    Plan,
    StoredKeys,
    answer_key,
    check,
    check_big_row,
    read_rows,
)
from evaluation.datasets.import_target import new_name, refuse_taken, save_new
from evaluation.datasets.source import Source
from evaluation.judges.models import Judge, JudgeTuning, JudgeVersion, Panel, PanelMember
from evaluation.kept import refresh
from evaluation.kept.events import Event, bump
from evaluation.labels.models import Adjudication, HumanLabel
from evaluation.runs import scores, snapshot
from evaluation.runs.models import GradedScore, JudgeCall, Run, Verdict
from evaluation.tables.rows import ImportRejected  # one refusal for every import

if TYPE_CHECKING:
    pass

logger = logging.getLogger(__name__)

EVENT_BATCH = 100  # checklists whose history entries are made at a time

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
    """Check, then write. ImportRejected (nothing written) lists every error; NotStored
    (nothing written either) says the database server's disk is full."""
    options = options or ImportOptions()
    with Source(path) as source:
        plan, dataset = check(source, options)
        pairwise_tables.check(source, plan, dataset)
        name = options.dataset.name if options.dataset else new_name(plan.meta, options.as_copy)
        try:
            with transaction.atomic():
                _lock(name)
                writer = _Writer(source, plan, options)
                try:
                    return writer.write()
                except bulk.Duplicates as exc:
                    raise ImportRejected(writer.duplicate_errors(exc)) from None
        except DatabaseError as exc:
            # Raised out of the transaction, so every row written before is rolled back.
            if storage.disk_full(exc):
                raise storage.NotStored(storage.FULL_DATABASE, full=True) from exc
            raise


class _Writer:
    def __init__(self, source: Source, plan: Plan, options: ImportOptions) -> None:
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
            # Checked before, but another import or writer may have taken the name since;
            # the import's lock on this name makes the check final for imports.
            name = new_name(meta, options.as_copy)
            refuse_taken(name, as_copy=bool(options.as_copy))
            dataset = Dataset(name=name, created_by=options.by)
        result = ImportResult(dataset=dataset, warnings=list(self.plan.warnings))
        result.dataset_created = dataset.pk is None
        if options.as_copy:
            result.copy_of = str(meta.get("name") or "").strip()
        self.result = result
        self.users = self._users()
        guidelines = self._guidelines()
        guideline = self.plan.guideline or (
            guidelines.get(self.plan.guideline_from_file) if self.plan.guideline_from_file else None
        )
        self._dataset_settings(dataset, meta, guideline)
        result.dataset = dataset
        if result.dataset_created and options.by is not None:
            dataset_set_role(dataset=dataset, user=options.by, role=roles.DatasetRole.ADMIN)
        self.dataset = dataset
        self._source_types()
        self._members()
        self.stored = StoredKeys(dataset)
        self._queries()
        self._checklists(guidelines)
        self._groups()
        self._criteria()
        self._citations()
        self._criterion_checks()
        self.stored = StoredKeys(dataset)
        self._perfect_answers()
        self._systems_and_answers()
        self.stored = StoredKeys(dataset)
        self._judges_panels_runs()
        self.stored = StoredKeys(dataset)
        self._verdicts()
        self._grades()
        self._labels()
        self._adjudications()
        pairwise_tables.write(self, self.source, self.plan, result)
        self._run_sizes()
        # Bulk writes send no signal: kept figures are keyed by the dataset's review
        # counters, which an import may change in any of its tables. An import that changed
        # nothing leaves them (and every kept figure) as they were.
        if result.changed:
            bump(dataset.pk, Event.DATASET_IMPORTED)
        # The new runs' scores counted in the worker once the import has committed, as at a
        # run's end (evaluation.analytics.receivers): their first reader finds them kept.
        for name in set(self.stored.runs) - self.runs_before:
            run_id = self.stored.runs[name]
            transaction.on_commit(
                lambda run_id=run_id: refresh.ensure(dataset.pk, run_id, scores.REFRESH_GROUP)
            )
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
            save_new(dataset, as_copy=bool(self.options.as_copy))
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
        """Only when asked (`copy_members`): roles for the files' members who hold none on
        the dataset, each recorded in the audit history; an existing member's role is never
        changed. Otherwise nobody is given a role: the members are only counted."""
        rows = self.plan.tables["members"]
        if not self.options.copy_members:
            self.result.members_not_copied = len(rows)
            return
        users = get_user_model().objects.in_bulk(list(self.users.values()))
        for _, row in rows:
            user = users[self.users[row["username"]]]
            if dataset_role(user, self.dataset) is None:
                role_set(
                    dataset=self.dataset, user=user, role=roles.DatasetRole(row["role"]),
                    by=self.options.by, via=RoleChange.Via.IMPORT,
                )  # fmt: skip
                self.result.granted.append((user.get_username(), row["role"]))
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
        fixed: list[int] = []  # queries already here that a file now names by their id
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
                "dimensions": row["dimensions"] or {},
            }  # fmt: skip
            pk = self.stored.queries.get(row["external_id"])
            query = queries.get(pk) if pk else None
            changed = query is None
            if query is None:
                # The id came from a file, which names the query by it: fixed from the start.
                query = Query.objects.create(
                    dataset=self.dataset, external_id=row["external_id"],
                    external_id_fixed_by="import", external_id_fixed_at=timezone.now(),
                    **values,
                )  # fmt: skip
                self.stored.queries[row["external_id"]] = query.pk
            elif not query.external_id_fixed_by:
                fixed.append(query.pk)
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
        if fixed:
            external_ids_fix(queries=Query.objects.filter(pk__in=fixed), by="import")

    def _checklists(self, guidelines: dict[tuple[str, int], Guideline]) -> None:
        checklists = {c.pk: c for c in Checklist.objects.filter(query__dataset=self.dataset)}
        # Checklists created or changed here, each to get one history entry (with its
        # guideline findings, if any). An unchanged one gets none, even if it breaks the
        # guideline: importing the same files again must change nothing.
        self.touched: dict[int, str] = {}
        for _, row in self.plan.tables["checklists"]:
            guideline = (
                guidelines[(row["guideline"], row["guideline_version"] or 1)]
                if row["guideline"]
                else None
            )
            values = {
                "status": row["status"], "guideline": guideline,
                "first_submitted_at": row["first_submitted_at"],
                "submitted_at": row["submitted_at"], "scoring": row["scoring"] or "",
                "undecided": row["undecided"] or "",
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

    def _groups(self) -> None:
        """The groups of the files' checklists, created or updated, then their parents (a
        parent may come after its child in the file). Checked by import_checks._check_groups.

        In bulk: one INSERT for the new groups, one UPDATE for the changed ones and one per
        300 for the parents (bulk.set_column). A save per group ran the kept figures'
        receiver for each (two queries): 2.7 s of the import of a 2,000-criterion checklist
        in 500 groups. Bulk writes send no signal; the import's own DATASET_IMPORTED event
        covers them, since every change here, a parent's included, counts as one in the
        result (and gives the checklist its history entry)."""
        found = CriterionGroup.objects.filter(checklist__query__dataset=self.dataset)
        stored = {g.pk: g for g in found}
        self.group_ids = dict(self.stored.groups)  # read before the queries: groups unchanged
        rows = self.plan.tables["groups"]
        new: dict[tuple[str, str, str], CriterionGroup] = {}
        changed: dict[int, CriterionGroup] = {}
        fields: set[str] = set()
        for _, row in rows:
            key = (row["query"], row["author"], row["external_id"])
            values = {
                "title": row["title"], "description": row["description"],
                "weight": Decimal(str(row["weight"] if row["weight"] is not None else 1)).quantize(
                    Decimal("0.01")),
                "position": row["position"] or 0,
            }  # fmt: skip
            pk = self.group_ids.get(key)
            if pk is None:
                checklist_id = self.stored.checklists[key[:2]]
                new[key] = CriterionGroup(
                    checklist_id=checklist_id, external_id=row["external_id"], **values
                )
                self.touched.setdefault(checklist_id, "updated")
                continue
            group = stored[pk]
            diff = [k for k, v in values.items() if getattr(group, k) != v]
            for k in diff:
                setattr(group, k, values[k])
            if diff:
                changed[pk] = group
                fields.update(diff)
        CriterionGroup.objects.bulk_create(new.values(), batch_size=1000)
        for key, group in new.items():
            self.group_ids[key] = group.pk
            stored[group.pk] = group
        created = {group.pk for group in new.values()}
        if changed:
            CriterionGroup.objects.bulk_update(changed.values(), sorted(fields), batch_size=1000)
        moved: dict[int, int | None] = {}
        for _, row in rows:
            group = stored[self.group_ids[(row["query"], row["author"], row["external_id"])]]
            key = (row["query"], row["author"], row["parent"])
            parent = self.group_ids[key] if row["parent"] else None
            if group.parent_id != parent:
                group.parent_id = moved[group.pk] = parent
                if group.pk not in created:
                    changed[group.pk] = group
        bulk.set_column(CriterionGroup, "parent", moved)
        for group in changed.values():
            self.touched.setdefault(group.checklist_id, "updated")
        if not rows:
            return  # no "groups" line in the import's summary
        self.result.count(
            "groups", created=len(new), updated=len(changed),
            unchanged=len(rows) - len(new) - len(changed),
        )  # fmt: skip

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
                "group_id": self.group_ids[(*key[:2], row["group"])] if row["group"] else None,
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
        self.stored = StoredKeys(self.dataset)
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

    def _criterion_checks(self) -> None:
        """Set each listed criterion's check (rows checked before); criteria not listed keep
        theirs, as citations of criteria not listed do."""
        for _, row in self.plan.tables["criterion_checks"]:
            pk = self.stored.criteria[(row["query"], row["author"], row["criterion"])]
            values = {
                "kind": row["kind"], "params": row["params"] or {},
                "threshold": row["threshold"], "evidence": row["evidence"],
            }  # fmt: skip
            check = CriterionCheck.objects.filter(criterion_id=pk).first()
            if check is None:
                CriterionCheck.objects.create(criterion_id=pk, **values)
                self.result.count("criterion_checks", created=1)
            elif any(getattr(check, k) != v for k, v in values.items()):
                CriterionCheck.objects.filter(pk=check.pk).update(**values)
                self.result.count("criterion_checks", updated=1)
            else:
                self.result.count("criterion_checks", unchanged=1)

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
        for _, _, row in read_rows(self.source, "answers", Errors()):
            key = (row["system"], row["system_version"])
            if key not in systems:
                systems[key] = System.objects.create(name=key[0], version=key[1])
                self.result.count("systems", created=1)
        ids = {k: s.pk for k, s in systems.items()}

        def rows() -> Iterator[tuple]:
            for _, line, row in read_rows(self.source, "answers", Errors()):
                agent, _ = agent_fields.check_fields(row)  # checked before: normalised here
                yield (
                    line, ids[(row["system"], row["system_version"])],
                    self.stored.queries[row["query"]], row["run_label"], row["sample"] or 0,
                    row["external_id"],
                    row["text"], agent["turns"], agent["context"], agent["metadata"], self.now,
                    self.now,
                )  # fmt: skip

        self._upsert(
            "answers", Answer, keys=("system_id", "query_id", "run_label", "sample"),
            columns=("system_id", "query_id", "run_label", "sample", "external_id", "text",
                     "turns", "context", "metadata", "created_at", "updated_at"),
            json_columns=("turns", "context", "metadata"), rows=rows(),
        )  # fmt: skip

    def _local(self, found: dict | None, judges: dict[str, Judge]) -> dict | None:
        """A run's snapshot from the file, its members' judges and example items named by
        this installation's ids: a judge by its name, an item by its keys (export._portable)."""
        if not found or not isinstance(found.get("members"), list):
            return found
        members = []
        for member in found["members"]:
            member = dict(member)
            if member.get("name") in judges:
                member["judge"] = judges[member["name"]].pk
            member.setdefault("judge", None)  # a judge the file does not bring, nor has this
            member.pop("example_items", None)  # ids of the exporting installation
            keys = member.pop("example_keys", None)
            if isinstance(keys, list):
                items = [
                    # An answer's key had no sample before answers had samples: sample 0.
                    [self.stored.answers.get((*p[0], 0)[:5]), self.stored.criteria.get(tuple(p[1]))]
                    for p in keys
                    if isinstance(p, list) and len(p) == 2 and all(isinstance(k, list) for k in p)
                ]
                member["example_items"] = [i for i in items if None not in i]
            members.append(member)
        return {**found, "members": members}

    def _judge_tuning(self, judge: Judge, row: dict) -> None:
        """The file's tuning of the judge, which was the exported dataset's, becomes this
        dataset's (a judge holds no tuning of its own), with the prompt versions it lacks
        (those it has are never rewritten: a version is a digest of its tuning), so that
        the verdicts' prompts rebuild here."""
        if row["instructions"] or row["examples"]:
            JudgeTuning.objects.update_or_create(
                judge=judge, dataset=self.dataset,
                defaults={"instructions": row["instructions"] or "",
                          "examples": row["examples"] or []},
            )  # fmt: skip
        have = set(judge.versions.filter(dataset=self.dataset).values_list("version", flat=True))
        new = [v for v in row["versions"] or () if v["version"] not in have]
        JudgeVersion.objects.bulk_create(
            JudgeVersion(
                judge=judge,
                dataset=self.dataset,
                version=v["version"],
                examples=v.get("examples") or [],
                instructions=v.get("instructions") or "",
            )
            for v in new
        )

    def _judges_panels_runs(self) -> None:
        judges = {j.name: j for j in Judge.objects.all()}
        for _, row in self.plan.tables["judges"]:
            if row["name"] in judges:
                self.result.count("judges", unchanged=1)  # site-wide: never rewritten
                self._judge_tuning(judges[row["name"]], row)
                continue
            values = {
                k: row[k]
                for k in ("kind", "base_url", "model", "api_key_env", "temperature", "max_tokens",
                          "seed", "timeout", "prompt_version", "context_tokens",
                          "criteria_per_call", "token_parameter", "response_format",
                          "reasoning_effort")
                if row[k] is not None
            }  # fmt: skip
            judges[row["name"]] = Judge.objects.create(name=row["name"], **values)
            self._judge_tuning(judges[row["name"]], row)
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
                conversation=row["conversation"] or Panel.Conversation.LAST_TURN,
            )  # fmt: skip
            for m in row["members"]:
                PanelMember.objects.create(
                    panel=panel, judge=judges[m["judge"]], samples=int(m.get("samples") or 1),
                    temperatures=m.get("temperatures") or [],
                )  # fmt: skip
            panels[row["name"]] = panel
            self.result.count("panels", created=1)
        self.runs_before = set(self.stored.runs)
        self.unsized: list[int] = []  # new runs whose file gives no `expected`
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
                snapshot=self._local(row.get("snapshot"), judges)
                or snapshot.take(panel, self.dataset.pk),
                started_at=row["created_at"], finished_at=row["finished_at"],
                expected=row.get("expected") or 0, scope=row.get("scope") or Run.Scope.ALL,
                estimate=row.get("estimate") or {},
                # Runs are exported oldest first: a trial's baseline, the run a canary or
                # a stability pass checked, and the previous canary are in by now.
                baseline_id=self.stored.runs.get(row.get("baseline") or ""),
                canary_for_id=self.stored.runs.get(row.get("canary_for") or ""),
                canary_result=self._canary_result(row.get("canary_result")),
                stability_for_id=self.stored.runs.get(row.get("stability_for") or ""),
            )  # fmt: skip
            if row.get("expected") is None:
                self.unsized.append(run.pk)
            if row["created_at"]:
                Run.objects.filter(pk=run.pk).update(created_at=row["created_at"])
            self.stored.runs[row["run"]] = run.pk
            self.result.count("runs", created=1)

    def _canary_result(self, result: dict | None) -> dict:
        """A canary's result with the previous canary's key turned into its id here."""
        if not result or result.get("previous") is None:
            return result or {}
        return {**result, "previous": self.stored.runs.get(result["previous"])}

    def _run_sizes(self) -> None:
        """A new run whose file does not say how many verdicts it expected (exports before
        issue 28) expects those it holds, so that its page reads "48 / 48 verdicts", not
        "48 / 0". Its tasks are not made up: no task of it ran here (the run page says so)."""
        if not self.unsized:
            return
        held = Verdict.objects.filter(run=OuterRef("pk")).values("run").annotate(n=Count("pk"))
        Run.objects.filter(pk__in=self.unsized).update(
            expected=Coalesce(Subquery(held.values("n")), 0)
        )

    # items -------------------------------------------------------------------------

    def _item(self, row: dict) -> tuple[int, int]:
        answer = answer_key(row)
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

        errors, known = Errors(), self.plan.known
        written = 0

        def rows() -> Iterator[tuple]:
            nonlocal written
            written = 0  # the file may be read twice (bulk.upsert's fresh path)
            errors.clear()
            for where, line, r in read_rows(self.source, "verdicts", errors):
                if not check_big_row(where, "verdicts", r, self.plan, known, errors):
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
        """A verdict's or a grade's judge-call values, in CALL_COLUMNS order. Attempts of 0
        are real (a cache hit, a no-LLM check, a task that failed before its call): only a
        missing value takes the model's default of 1, or every re-import of such verdicts
        would rewrite them."""
        attempts = 1 if r["attempts"] is None else r["attempts"]
        return (
            r["raw_output"], r["error_kind"], r["error"], r["prompt_tokens"] or 0,
            r["completion_tokens"] or 0, r["latency_ms"] or 0, attempts,
            bool(r["cache_hit"]), r["cache_key"], r["judge_params"] or {},
            r["created_at"] or self.now, self.now,
        )  # fmt: skip

    def _grades(self) -> None:
        if not self.plan.big.get("grades"):
            return
        judges = dict(Judge.objects.values_list("name", "pk"))

        def rows() -> Iterator[tuple]:
            for _, line, r in read_rows(self.source, "grades", Errors()):
                answer = answer_key(r)
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
            for _, line, r in read_rows(self.source, "labels", Errors()):
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
            for _, line, r in read_rows(self.source, "adjudications", Errors()):
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
    "pairwise_votes": "session, query and rater (a judge's: judge, sample and order)",
}
