"""Writing a dataset export: a zip with one file per table and format, a data card
(README.md), dataset.json and manifest.json. See docs/data-formats.md#dataset-export.

`export_chunks` is a generator of bytes: the streamed download sends each chunk as it
comes, the command and the Celery job write them to a file. Rows are read with server-side
cursors (`iterator()`), written in chunks, and the zip is written forward only, so memory
stays flat whatever the number of runs and verdicts. Only the lookups from ids to external
keys (queries, criteria, answers: thousands, not millions) are held in memory, and they grow
with the items: about 27 MB at 120,000 criteria (docs/benchmarks.md).

Blind annotation: rows come from checklists the user may read (`checklists_for_user`, the
rule every page and API uses); criteria, citations, perfect answers and every item of a
hidden checklist are left out with it. Only dataset admins export, and they may read every
checklist, but the rule is applied here all the same so that it holds in one place.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import queue
import threading
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import Prefetch
from django.utils import timezone
from django.utils.text import slugify
from guardian.shortcuts import get_users_with_perms

from annotation import roles
from annotation.models import (
    Checklist,
    Citation,
    Criterion,
    CriterionGroup,
    Dataset,
    Guideline,
    Query,
    SourceType,
)
from annotation.selectors import checklists_for_user
from annotation.services import external_ids_fix
from config.site_permissions import manages_judges
from evaluation.analytics import figures
from evaluation.answers.models import Answer, System
from evaluation.archive import parquet as archive_rows
from evaluation.archive import services as archive_services
from evaluation.checks.models import CriterionCheck
from evaluation.cross_evaluation.export import overlap_rows
from evaluation.datasets import export_sql
from evaluation.judges.models import Judge, JudgeTuning, JudgeVersion, Panel
from evaluation.kept import figures as figure_cache
from evaluation.labels.models import Adjudication, HumanLabel
from evaluation.metrics.analytics import saturated_queries
from evaluation.pairwise.models import PairwiseJudgeVote, PairwiseSession, PairwiseVote
from evaluation.pairwise.selectors import session_keys
from evaluation.runs.models import GradedScore, Run, RunArchive, Verdict
from evaluation.tables import schema
from evaluation.tables.formats import CHUNK_ROWS, WRITERS

if TYPE_CHECKING:
    from annotation.access import AnyUser

from evaluation.runs.access import RAW_OUTPUT_HIDDEN
from evaluation.runs.scores import run_report

Row = tuple
COMPRESS_LEVEL = 1
Progress = Callable[[int], None]


def query_key(pk: int, external_id: str) -> str:
    """A query's key in the files: its external id, which every query has
    (annotation.query_ids), the one the reward API and the review imports take."""
    return external_id


def criterion_key(pk: int, external_id: str) -> str:
    return external_id or f"criterion-{pk}"


def perfect_label(author: str) -> str:
    return f"perfect:{author}"


def _iso(value: dt.date | dt.datetime | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    return value.isoformat()


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


@dataclass
class Keys:
    """Ids to external keys for one dataset, as the user may see it."""

    queries: dict[int, str] = field(default_factory=dict)
    checklists: dict[int, tuple[str, str]] = field(default_factory=dict)  # (query, author)
    criteria: dict[int, tuple[str, str, str]] = field(default_factory=dict)
    answers: dict[int, tuple[str, str, str, str, int]] = field(default_factory=dict)
    runs: dict[int, str] = field(default_factory=dict)
    judges: dict[int, str] = field(default_factory=dict)
    users: dict[int, str] = field(default_factory=dict)

    def user(self, pk: int | None) -> str:
        return self.users.get(pk, "") if pk else ""


def visible_checklists(dataset: Dataset, user: AnyUser | None):
    checklists = Checklist.objects.filter(query__dataset=dataset)
    if user is not None:
        checklists = checklists.filter(pk__in=checklists_for_user(user).values("pk"))
    return checklists


def visible_criteria(checklists):
    """The criteria of these checklists: the rows of `Keys.criteria`. The tables of criteria
    filter by this subquery, not by a list of the keys' ids, which made statements of
    120,000 parameters (and their copies) at the month preset's size."""
    return Criterion.objects.filter(checklist__in=checklists)


def build_keys(dataset: Dataset, user: AnyUser | None, include: tuple[str, ...]) -> Keys:
    keys = Keys()
    keys.users = dict(get_user_model().objects.values_list("pk", "username"))
    for pk, external_id in Query.objects.filter(dataset=dataset).values_list("pk", "external_id"):
        keys.queries[pk] = query_key(pk, external_id)
    checklists = visible_checklists(dataset, user)
    for pk, query_id, author_id in checklists.values_list("pk", "query_id", "author_id"):
        keys.checklists[pk] = (keys.queries[query_id], keys.users[author_id])
    # Read in chunks (`iterator`): a list of every row beside the dict made from it
    # raised the peak RSS by 17 MB at 120,000 criteria (docs/benchmarks.md), for a first
    # byte some 50 ms later; chunks of 5,000 rows made it about 0.1 s later.
    criteria = visible_criteria(checklists).values_list("pk", "checklist_id", "external_id")
    for pk, checklist_id, external_id in criteria.iterator(chunk_size=20000):
        keys.criteria[pk] = (*keys.checklists[checklist_id], criterion_key(pk, external_id))
    if "answers" in include:
        answers = Answer.objects.filter(query__dataset=dataset).values_list(
            "pk",
            "query_id",
            "system__name",
            "system__version",
            "run_label",
            "sample",
            "checklist_id",
        )
        for pk, query_id, system, version, run_label, sample, checklist_id in answers.iterator(
            chunk_size=20000
        ):
            if checklist_id is not None:  # a perfect answer: named by its checklist's author
                if checklist_id not in keys.checklists:
                    continue
                run_label = perfect_label(keys.checklists[checklist_id][1])
            keys.answers[pk] = (system, version, keys.queries[query_id], run_label, sample)
    if "verdicts" in include:
        runs = list(
            Run.objects.filter(dataset=dataset)
            .order_by("created_at", "pk")
            .values_list("pk", "name")
        )
        names = [name for _, name in runs]
        for pk, name in runs:
            keys.runs[pk] = name if name and names.count(name) == 1 else f"run-{pk}"
        keys.judges = dict(Judge.objects.values_list("pk", "name"))
    return keys


class _Sink(io.RawIOBase):
    """Where the zip is written: chunks wait here until the generator hands them on. The
    deflating thread (_Deflater) writes while the generator takes: a lock keeps the two
    apart."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.size = 0
        self._lock = threading.Lock()

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:  # type: ignore[override]
        with self._lock:
            self.chunks.append(bytes(data))
            self.size += len(data)
        return len(data)

    def take(self) -> bytes:
        with self._lock:
            data = b"".join(self.chunks)
            self.chunks.clear()
            self.size = 0
        return data


class _Deflater:
    """Writes to a zip member from a second thread, so that deflating (and the CRC) runs
    beside the thread that reads rows: zlib releases the GIL while it works, and the
    machine has a second core. Deflating a million verdicts (712 MB) costs 1.5–4 s of CPU,
    which used to run in line with the reading. The queue is short: memory stays flat."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.queue: queue.Queue[bytes | None] = queue.Queue(maxsize=4)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="export-deflate", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while (data := self.queue.get()) is not None:
            if self.error is None:
                try:
                    self.out.write(data)
                except BaseException as exc:  # handed to the reading thread in write/close
                    self.error = exc

    def write(self, data: bytes) -> None:
        if self.error is not None:
            raise self.error
        self.queue.put(data)

    def close(self) -> None:
        """Wait until every block is written; raise what the thread met, if anything."""
        self.queue.put(None)
        self.thread.join()
        if self.error is not None:
            raise self.error


@dataclass(frozen=True)
class ExportOptions:
    include: tuple[str, ...] = schema.INCLUDES
    formats: tuple[str, ...] = schema.FORMATS

    @classmethod
    def parse(cls, include: Iterable[str] | None, formats: Iterable[str] | None) -> ExportOptions:
        """ValueError names what is wrong."""
        return cls(
            include=schema.expand_include(
                list(include) if include is not None else schema.INCLUDES
            ),
            formats=schema.check_formats(list(formats) if formats is not None else schema.FORMATS),
        )


def check_archives(dataset: Dataset, options: ExportOptions) -> None:
    """An export of verdicts reads archived runs' from their Parquet files: refuse it
    (archive_services.ArchiveMissing, naming the run and file) when one is missing. The
    pages, the API and the command ask before answering; the export asks again when it
    starts (a job's file may go meanwhile)."""
    if "verdicts" in options.include:
        archive_services.check_files(dataset.pk)


def file_name(dataset: Dataset, when: dt.datetime | None = None) -> str:
    when = when or timezone.now()
    return f"{slugify(dataset.name) or 'dataset'}-{when:%Y%m%d-%H%M%S}.zip"


def count_rows(dataset: Dataset, include: tuple[str, ...]) -> int:
    """About how many rows an export writes (per format): for progress, and to choose
    between a streamed download and a job."""
    total = Query.objects.filter(dataset=dataset).count()
    total += Criterion.objects.filter(checklist__query__dataset=dataset).count()
    if "answers" in include:
        total += Answer.objects.filter(query__dataset=dataset).count()
    if "verdicts" in include:
        total += Verdict.objects.filter(run__dataset=dataset).count()
    if "labels" in include:
        total += HumanLabel.objects.filter(answer__query__dataset=dataset).count()
    if "adjudications" in include:
        total += Adjudication.objects.filter(answer__query__dataset=dataset).count()
    if "pairwise" in include:
        total += PairwiseVote.objects.filter(pair__session__dataset=dataset).count()
        total += PairwiseJudgeVote.objects.filter(pair__session__dataset=dataset).count()
    return total


class Exporter:
    def __init__(
        self,
        dataset: Dataset,
        options: ExportOptions,
        *,
        user: AnyUser | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.dataset = dataset
        self.options = options
        self.user = user
        # A judge's connection details (base URL, key variable, what answered when a reply
        # was not a verdict) are for the people who manage judges and the command line: a
        # dataset admin's export leaves them out (docs/judging.md#who-sees-what).
        self.connection_shown = user is None or manages_judges(user)
        self.progress = progress
        self.counts: dict[str, int] = {}
        self.rows_done = 0
        self.now = timezone.now()
        self.folder = slugify(dataset.name) or "dataset"

    # --- the zip -----------------------------------------------------------------------

    def chunks(self) -> Iterator[bytes]:
        """The zip, chunk by chunk. On PostgreSQL every table is read from one snapshot."""
        # An archived run whose file is gone: refused before the first byte (and before
        # the external ids are fixed below), naming the run and the file.
        check_archives(self.dataset, self.options)
        consistent = connection.vendor == "postgresql" and not connection.in_atomic_block
        # The file will name every query by its external id: from now on they may not
        # change. Written before the read-only snapshot below (which allows no write).
        external_ids_fix(queries=Query.objects.filter(dataset=self.dataset), by="export")
        with transaction.atomic() if consistent else _nothing():
            if consistent:
                with connection.cursor() as cursor:
                    cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            # Scores computed for the export are not cached: the snapshot allows no write.
            with figure_cache.read_only() if consistent else _nothing():
                yield from self._write()

    def _write(self) -> Iterator[bytes]:
        sink = _Sink()
        archive = zipfile.ZipFile(
            sink, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=COMPRESS_LEVEL
        )
        self.keys = build_keys(self.dataset, self.user, self.options.include)
        self._member(archive, "dataset.json", self._dataset_json())
        yield sink.take()  # the first bytes go out before any big table is read
        for table in schema.tables_for(self.options.include):
            for fmt in self.options.formats:
                yield from self._table(archive, sink, table, fmt)
            self.rows_done += self.counts[table.name]
            if self.progress:
                self.progress(self.rows_done)
        self._member(archive, "README.md", self._data_card().encode())
        self._member(archive, "manifest.json", self._manifest())
        for info in archive.infolist():
            # Readable by all once unpacked (a member opened by its name would be rw-------).
            # Only the central directory holds these bits, and close() writes it from here.
            info.external_attr = 0o644 << 16
        archive.close()
        yield sink.take()

    def _open(
        self, archive: zipfile.ZipFile, name: str, *, compress: bool = True, big: bool = False
    ) -> IO[bytes]:
        """A new member of the zip, to write. A deflated one is opened by its name so that
        the archive's `compresslevel` applies: zlib's fastest level, which on the bench's
        verdicts deflates at ~470 MB/s against ~190 MB/s at zlib's default (6), for a zip
        about a third larger (docs/benchmarks.md). A `ZipInfo` passed to `ZipFile.open`
        would be deflated at the default, and Python 3.11 has no public way to give one its
        level (`ZipInfo.compress_level` came in 3.13). `big`: its size is not known before
        and may pass 4 GiB (ZIP64)."""
        path = f"{self.folder}/{name}"
        if compress:
            return archive.open(path, "w", force_zip64=big)
        # Stored (no level to set): the defaults of a member opened by its name, so that
        # every member looks alike (date 1980-01-01: the export's time is in manifest.json).
        info = zipfile.ZipInfo(path)
        info.compress_type = zipfile.ZIP_STORED
        return archive.open(info, "w", force_zip64=big)

    def _member(self, archive: zipfile.ZipFile, name: str, data: bytes) -> None:
        with self._open(archive, name) as out:
            out.write(data)

    def _table(
        self, archive: zipfile.ZipFile, sink: _Sink, table: schema.Table, fmt: str
    ) -> Iterator[bytes]:
        # Parquet compresses its own pages; deflating them again costs time for nothing.
        name, compress = f"{table.name}.{fmt}", fmt != "parquet"
        # The SQL path reads the verdict table only: an archived run's verdicts are in its
        # Parquet file, which the Python path reads (`_verdicts`).
        if (
            table.name == "verdicts" and fmt == "jsonl" and connection.vendor == "postgresql"
            and not self._archived_runs()
        ):  # fmt: skip
            yield from self._lines_from_sql(archive, sink, name)
            return
        with self._open(archive, name, compress=compress, big=True) as out:
            writer = WRITERS[fmt](table, out)
            for rows in self.rows(table.name):
                writer.write(rows)
                if sink.size > 1 << 20:
                    yield sink.take()
            writer.close()
        self.counts[table.name] = writer.rows
        yield sink.take()

    def _lines_from_sql(self, archive: zipfile.ZipFile, sink: _Sink, name: str) -> Iterator[bytes]:
        """verdicts.jsonl with each line made by PostgreSQL (export_sql): the same bytes
        as the Python writer. This thread copies PostgreSQL's bytes, another deflates
        them, and PostgreSQL formats the next rows meanwhile: three processors' work
        side by side."""
        rows = 0
        with self._open(archive, name, big=True) as out:
            deflater = _Deflater(out)
            try:
                for block, lines in export_sql.verdict_bytes(
                    self.keys, connection_shown=self.connection_shown
                ):
                    deflater.write(block)
                    rows += lines
                    if sink.size > 1 << 20:
                        yield sink.take()
            finally:
                deflater.close()  # also when the download stops half way
        self.counts["verdicts"] = rows
        yield sink.take()

    # --- rows --------------------------------------------------------------------------

    def rows(self, table: str) -> Iterator[list[Row]]:
        """The table's rows in column order, in chunks."""
        yield from _chunked(getattr(self, f"_{table}")())

    def _guidelines(self) -> Iterator[Row]:
        used = set(
            visible_checklists(self.dataset, self.user).values_list("guideline_id", flat=True)
        )
        used.add(self.dataset.guideline_id)
        for g in Guideline.objects.filter(pk__in=used - {None}).order_by("name", "version"):
            yield (g.name, g.version, g.description, g.config)

    def _source_types(self) -> Iterator[Row]:
        criteria = self._criteria_rows()
        # distinct(): the few slugs, not one row per criterion and source type.
        slugs = set(criteria.order_by().values_list("source_types__slug", flat=True).distinct())
        slugs |= set(
            Citation.objects.filter(criterion__in=criteria)
            .order_by()
            .values_list("source_type__slug", flat=True)
            .distinct()
        )
        for st in SourceType.objects.filter(slug__in=slugs - {None}).order_by("slug"):
            yield (st.slug, st.name, st.is_banned, st.description)

    def _members(self) -> Iterator[Row]:
        members = get_users_with_perms(
            self.dataset, attach_perms=True, with_superusers=False, with_group_users=False
        )
        for user, perms in sorted(members.items(), key=lambda pair: pair[0].get_username()):
            role = roles.role_for_permissions(set(perms))
            if role is not None:
                yield (user.get_username(), role.value)

    def _queries(self) -> Iterator[Row]:
        queries = (
            Query.objects.filter(dataset=self.dataset)
            .select_related("category")
            .prefetch_related("tags", "assigned_experts")
            .order_by("pk")
        )
        for q in queries.iterator(chunk_size=500):
            yield (
                self.keys.queries[q.pk], q.text, _iso(q.query_date),
                q.category.name if q.category else "", sorted(t.name for t in q.tags.all()),
                q.reference_answer, q.status,
                sorted(u.get_username() for u in q.assigned_experts.all()), q.complexity,
                self.keys.user(q.created_by_id), q.dimensions or {}, q.pk,
            )  # fmt: skip

    def _checklists(self) -> Iterator[Row]:
        checklists = (
            Checklist.objects.filter(pk__in=list(self.keys.checklists))
            .select_related("guideline")
            .order_by("pk")
        )
        for c in checklists.iterator(chunk_size=2000):
            query, author = self.keys.checklists[c.pk]
            yield (
                query, author, c.status, c.guideline.name if c.guideline else "",
                c.guideline.version if c.guideline else None, _iso(c.first_submitted_at),
                _iso(c.submitted_at), c.scoring, c.undecided, c.pk,
            )  # fmt: skip

    def _groups(self) -> Iterator[Row]:
        groups = CriterionGroup.objects.filter(checklist_id__in=list(self.keys.checklists))
        rows = list(groups.order_by("checklist_id", "position", "pk").values_list(
            "pk", "checklist_id", "parent_id", "external_id", "title", "description", "weight",
            "position",
        ))  # fmt: skip
        keys = {pk: external_id or f"group-{pk}" for pk, _, _, external_id, *_ in rows}
        for pk, checklist_id, parent, _, title, description, weight, position in rows:
            yield (
                *self.keys.checklists[checklist_id], keys[pk], keys.get(parent, ""), title,
                description, float(weight), position,
            )  # fmt: skip

    def _criteria_rows(self):
        """The exported criteria (those of `keys.criteria`), as a subquery."""
        return visible_criteria(visible_checklists(self.dataset, self.user))

    def _criteria(self) -> Iterator[Row]:
        # Each criterion's source types, read beside the criteria in the same order and
        # merged: a dict of them for every criterion was held through the table.
        through = (
            Criterion.source_types.through.objects.filter(criterion__in=self._criteria_rows())
            .order_by("criterion_id")
            .values_list("criterion_id", "sourcetype__slug")
        )
        slugs = _grouped(through.iterator(5000))
        criteria = self._criteria_rows().order_by("pk")
        rows = criteria.values_list(
            "pk", "position", "text", "kind", "notes", "weight", "is_core", "scoring_enabled",
            "archived_at", "previous_version_id", "group_id", "group__external_id",
        )  # fmt: skip
        for (
            pk,
            position,
            text,
            kind,
            notes,
            weight,
            is_core,
            scoring,
            archived,
            previous,
            group,
            group_external,
        ) in rows.iterator(5000):
            if pk not in self.keys.criteria:
                continue  # created after the keys were read (no snapshot: SQLite)
            yield (
                *self.keys.criteria[pk], position, text, kind, sorted(slugs.of(pk)), notes,
                float(weight), is_core, scoring, _iso(archived),
                self.keys.criteria[previous][2] if previous in self.keys.criteria else "",
                (group_external or f"group-{group}") if group else "", pk,
            )  # fmt: skip

    def _citations(self) -> Iterator[Row]:
        citations = (
            Citation.objects.filter(criterion__in=self._criteria_rows())
            .order_by("pk")
            .values_list("criterion_id", "title", "url", "source_type__slug", "published_on")
        )
        for criterion_id, title, url, slug, published in citations.iterator(5000):
            if criterion_id not in self.keys.criteria:
                continue  # as in _criteria
            yield (*self.keys.criteria[criterion_id], title, url, slug or "", _iso(published))

    def _criterion_checks(self) -> Iterator[Row]:
        checks = (
            CriterionCheck.objects.filter(criterion__in=self._criteria_rows())
            .order_by("criterion_id")
            .values_list("criterion_id", "kind", "params", "threshold", "evidence")
        )
        for criterion_id, kind, params, threshold, evidence in checks.iterator(5000):
            if criterion_id not in self.keys.criteria:
                continue  # as in _criteria
            yield (*self.keys.criteria[criterion_id], kind, params or None, threshold, evidence)

    def _perfect_answers(self) -> Iterator[Row]:
        answers = (
            Answer.objects.filter(checklist_id__in=list(self.keys.checklists))
            .order_by("pk")
            .values_list("checklist_id", "text", "author_id", "drafted_by__name",
                         "draft_prompt_version")
        )  # fmt: skip
        for checklist_id, text, author_id, drafted_by, prompt_version in answers.iterator(2000):
            query, author = self.keys.checklists[checklist_id]
            yield (query, author, text, self.keys.user(author_id), drafted_by or "", prompt_version)

    def _systems(self) -> Iterator[Row]:
        systems = System.objects.filter(
            answers__query__dataset=self.dataset, is_reference=False
        ).distinct()
        for s in systems.order_by("name", "version"):
            yield (s.name, s.version, s.description)

    def _answers(self) -> Iterator[Row]:
        answers = (
            Answer.objects.filter(query__dataset=self.dataset, checklist__isnull=True)
            .order_by("pk")
            .values_list("pk", "external_id", "text", "turns", "context", "metadata")
        )
        for pk, external_id, text, turns, context, metadata in answers.iterator(2000):
            # Empty agent fields are written as null: a plain answer's row stays small.
            yield (
                *self.keys.answers[pk], external_id, text, pk, turns or None, context or None,
                metadata or None,
            )  # fmt: skip

    def _judges(self) -> Iterator[Row]:
        used = Verdict.objects.filter(run__dataset=self.dataset).values("judge_id").distinct()
        panels = Run.objects.filter(dataset=self.dataset).values("panel_id")
        judges = Judge.objects.filter(pk__in=used) | Judge.objects.filter(
            memberships__panel__in=panels
        )
        if "pairwise" in self.options.include:
            # The pairwise judges too: their replies name them (pairwise_votes).
            pairwise = PairwiseJudgeVote.objects.filter(pair__session__dataset=self.dataset)
            judges |= Judge.objects.filter(pk__in=pairwise.values("judge_id"))
        own = JudgeVersion.objects.filter(dataset=self.dataset)
        judges = judges.distinct().order_by("name").prefetch_related(Prefetch("versions", own))
        tunings = {t.judge_id: t for t in JudgeTuning.objects.filter(dataset=self.dataset)}
        # A judge's connection details are for the people who manage judges (and the command
        # line): a dataset admin's export leaves them empty, for a site admin to fill in
        # where the file is imported.
        connection_shown = self.connection_shown
        for j in judges:
            # This dataset's tuning and versions only: another dataset's never leave it. The
            # versions keep the prompts of this dataset's verdicts rebuildable elsewhere.
            versions = [
                {"version": v.version, "instructions": v.instructions, "examples": v.examples}
                for v in sorted(j.versions.all(), key=lambda v: (v.created_at, v.version))
            ]
            t = tunings.get(j.pk)
            base_url, key_env = (j.base_url, j.api_key_env) if connection_shown else ("", "")
            yield (
                j.name, j.kind, base_url, j.model, key_env, j.temperature, j.max_tokens,
                j.seed, j.timeout, j.prompt_version, j.context_tokens,
                t.instructions if t else "", (t.examples if t else None) or None,
                j.criteria_per_call, j.token_parameter, j.response_format, j.reasoning_effort,
                versions or None,
            )  # fmt: skip

    def _panels(self) -> Iterator[Row]:
        panels = Panel.objects.filter(runs__dataset=self.dataset).distinct().order_by("name")
        for p in panels.prefetch_related("members__judge"):
            members = [
                {"judge": m.judge.name, "samples": m.samples, "temperatures": m.temperatures}
                for m in sorted(p.members.all(), key=lambda m: m.judge.name)
            ]
            yield (p.name, p.description, p.method, p.threshold, p.graded, members, p.conversation)

    def _portable(self, snapshot: dict) -> dict:
        """A run's snapshot without this installation's ids, which name other rows, or none,
        where the file is imported: each member's judge by its name alone (the importer puts
        the id of the judge of that name), the items its judge was shown as examples by their
        keys (`example_keys`: [answer key, criterion key]); items whose answer is not in the
        export are left out."""
        if not isinstance(snapshot.get("members"), list):
            return snapshot
        members = []
        for member in snapshot["members"]:
            items = member.get("example_items")
            member = {k: v for k, v in member.items() if k not in ("judge", "example_items")}
            if items:
                member["example_keys"] = [
                    [list(self.keys.answers[a]), list(self.keys.criteria[c])]
                    for a, c in items
                    if a in self.keys.answers and c in self.keys.criteria
                ]
            members.append(member)
        return {**snapshot, "members": members}

    def _runs(self) -> Iterator[Row]:
        runs = Run.objects.filter(pk__in=list(self.keys.runs)).select_related("panel")
        for r in runs.order_by("created_at", "pk"):
            yield (
                self.keys.runs[r.pk], r.kind, r.panel.name, r.status, r.reason, r.expected,
                r.answer_run_label, self._portable(r.snapshot), _iso(r.created_at),
                _iso(r.finished_at),
                r.scope, self.keys.runs.get(r.baseline_id, ""), r.estimate,
                # Which runs are canaries and stability passes, and of which run: else an
                # import shows them as runs of their own, in the trend and the run lists.
                self.keys.runs.get(r.canary_for_id, ""),
                _keyed_previous(r.canary_result, self.keys.runs),
                self.keys.runs.get(r.stability_for_id, ""),
            )  # fmt: skip

    def _verdicts(self) -> Iterator[Row]:
        # Run by run, each in the order of its unique index (answer, criterion, judge,
        # sample): PostgreSQL streams that from the index without sorting (export_sql
        # writes the same order), and an import keeps it (ids are given in file order).
        archived = self._archived_runs()
        for run_id in self.keys.runs:
            if run_id in archived:
                found = archive_rows.verdict_rows(archived[run_id], _VERDICT_COLUMNS)
                yield from self._verdict_rows(run_id, found)
                continue
            verdicts = (
                Verdict.objects.filter(run_id=run_id)
                .order_by(*export_sql.VERDICT_ORDER)
                .values_list(*_VERDICT_COLUMNS)
            )
            yield from self._verdict_rows(run_id, verdicts.iterator(chunk_size=5000))

    def _verdict_rows(self, run_id: int, found: Iterable[tuple]) -> Iterator[Row]:
        """The run's verdicts (tuples of _VERDICT_COLUMNS, in VERDICT_ORDER) as the file's
        rows: only items of checklists the user may read, connection details as allowed."""
        answers, criteria, judges = self.keys.answers, self.keys.criteria, self.keys.judges
        name = self.keys.runs[run_id]
        for row in found:
            answer, criterion = answers.get(row[0]), criteria.get(row[1])
            if answer is None or criterion is None:
                continue  # an item of a checklist the user may not read
            if not self.connection_shown:
                row = _without_connection(row)
            yield (
                name, *answer, criterion[1], criterion[2], judges[row[2]],
                *row[3:17], _iso(row[17]),
            )  # fmt: skip

    def _archived_runs(self) -> dict[int, Path]:
        """The exported runs whose verdicts are archived, and their Parquet files: their
        rows are read from there, the same rows the table held (evaluation.archive)."""
        if not hasattr(self, "_archived"):
            found = RunArchive.objects.filter(run_id__in=list(self.keys.runs))
            self._archived = {
                run_id: archive_services.archive_dir() / path
                for run_id, path in found.values_list("run_id", "path")
            }
        return self._archived

    def _grades(self) -> Iterator[Row]:
        grades = (
            GradedScore.objects.filter(run__dataset=self.dataset)
            .order_by("pk")
            .values_list(
                "run_id", "answer_id", "judge_id", "sample", "outcome", "score", "reasoning",
                "raw_output", "error_kind", "error", "prompt_tokens", "completion_tokens",
                "latency_ms", "attempts", "cache_hit", "cache_key", "judge_params", "created_at",
            )
        )  # fmt: skip
        for row in grades.iterator(chunk_size=5000):
            answer = self.keys.answers.get(row[1])
            if answer is None:
                continue
            if not self.connection_shown:
                row = _without_connection(row)
            yield (
                self.keys.runs[row[0]], *answer, self.keys.judges[row[2]], *row[3:17],
                _iso(row[17]),
            )  # fmt: skip

    def _labels(self) -> Iterator[Row]:
        labels = (
            HumanLabel.objects.filter(answer__query__dataset=self.dataset)
            .order_by("pk")
            .values_list(
                "answer_id", "criterion_id", "rater", "label", "note", "source", "reviewer_id",
                "created_at", "updated_at",
            )
        )  # fmt: skip
        for a, c, rater, label, note, source, reviewer, created, updated in labels.iterator(5000):
            answer, criterion = self.keys.answers.get(a), self.keys.criteria.get(c)
            if answer is None or criterion is None:
                continue
            yield (
                *answer, criterion[1], criterion[2], rater, label, note, source,
                self.keys.user(reviewer), _iso(created), _iso(updated),
            )  # fmt: skip

    def _adjudications(self) -> Iterator[Row]:
        adjudications = (
            Adjudication.objects.filter(answer__query__dataset=self.dataset)
            .order_by("pk")
            .values_list(
                "answer_id", "criterion_id", "label", "reason", "decided_by_id", "decided_at",
                "version",
            )
        )  # fmt: skip
        for a, c, label, reason, by, at, version in adjudications.iterator(5000):
            answer, criterion = self.keys.answers.get(a), self.keys.criteria.get(c)
            if answer is None or criterion is None:
                continue
            yield (
                *answer, criterion[1], criterion[2], label, reason, self.keys.user(by), _iso(at),
                version,
            )  # fmt: skip

    def _pairwise_sessions(self) -> Iterator[Row]:
        keys = self._session_keys()
        sessions = PairwiseSession.objects.filter(dataset=self.dataset).select_related(
            "system_a", "system_b"
        )
        for s in sessions.order_by("created_at", "pk"):
            yield (
                keys[s.pk], s.name, s.system_a.name, s.system_a.version, s.run_label_a,
                s.system_b.name, s.system_b.version, s.run_label_b, s.reviewers_per_pair,
                s.show_checklist, self.keys.user(s.created_by_id), _iso(s.created_at), s.pk,
            )  # fmt: skip

    def _session_keys(self) -> dict[int, str]:
        if not hasattr(self, "_sessions"):
            self._sessions = session_keys(self.dataset)
        return self._sessions

    # What a vote row reads of its pair: the session, query and the two answers.
    _PAIR = (
        "pair__session_id", "pair__query_id", "pair__answer_a_id", "pair__answer_a__external_id",
        "pair__answer_b_id", "pair__answer_b__external_id",
    )  # fmt: skip

    def _pair_key(
        self, session: int, query: int, a: int, a_external: str, b: int, b_external: str
    ) -> tuple | None:
        """The columns naming a vote's pair (session to answer_b), None when an answer is not
        in the export."""
        answer_a, answer_b = self.keys.answers.get(a), self.keys.answers.get(b)
        if answer_a is None or answer_b is None:
            return None
        return (
            self._session_keys()[session], self.keys.queries[query], *answer_a[:2], answer_a[3],
            answer_a[4], a_external, *answer_b[:2], answer_b[3], answer_b[4], b_external,
        )  # fmt: skip

    def _pairwise_votes(self) -> Iterator[Row]:
        """The reviewers' cast votes (a pair shown and not voted yet is not a vote), then the
        judges' replies, each in its table's key order."""
        votes = (
            PairwiseVote.objects.filter(pair__session__dataset=self.dataset)
            .exclude(preference="")
            .order_by("pair__session_id", "pair_id", "rater")
            .values_list(*self._PAIR, "rater", "reviewer_id", "source", "first_is_a",
                         "preference", "reason", "voted_at")
        )  # fmt: skip
        for *pair, rater, reviewer, source, first_is_a, side, reason, at in votes.iterator(5000):
            named = self._pair_key(*pair)
            if named is not None:
                yield (
                    *named, "reviewer", rater, self.keys.user(reviewer), source, first_is_a,
                    "", None, "", "", side, reason, "", "", "", None, None, None, _iso(at),
                )  # fmt: skip
        replies = (
            PairwiseJudgeVote.objects.filter(pair__session__dataset=self.dataset)
            .order_by("pair__session_id", "pair_id", "judge_id", "sample", "order")
            .values_list(*self._PAIR, "judge_id", "sample", "order", "outcome", "preference",
                         "rationale", "raw_output", "prompt_version", "cache_key",
                         "prompt_tokens", "completion_tokens", "latency_ms", "created_at")
        )  # fmt: skip
        for row in replies.iterator(5000):
            named = self._pair_key(*row[:6])
            if named is None:
                continue
            judge, sample, order, outcome, side, rationale, raw, *call, at = row[6:]
            if not self.connection_shown and outcome in RAW_OUTPUT_HIDDEN:
                raw = ""  # as for verdicts: what answered when a reply was not a vote
            yield (
                *named, "judge", "", "", "", None, self.keys.judges[judge], sample, order,
                outcome, side, rationale, raw, *call, _iso(at),
            )  # fmt: skip

    def _scores(self) -> Iterator[Row]:
        for run in Run.objects.filter(pk__in=list(self.keys.runs)).order_by("created_at", "pk"):
            for a in run_report(run).answers:
                answer = self.keys.answers.get(a.answer_id)
                if answer is None:
                    continue
                yield (
                    self.keys.runs[run.pk], *answer, _round(a.score), _round(a.weighted),
                    _round(a.core), a.undecided, a.split, a.adjudicated, a.passed,
                    _round(a.graded), ",".join(sorted({c.scoring for c in a.checklists})),
                    _round(a.value), ",".join(sorted({c.undecided_as for c in a.checklists})),
                )  # fmt: skip

    def _saturated_queries(self) -> Iterator[Row]:

        runs = Run.objects.filter(pk__in=list(self.keys.runs)).exclude(
            kind=Run.Kind.CROSS_EVALUATION
        )
        for run in runs.order_by("created_at", "pk"):
            kept = figures.queries(run)  # the analytics pages' per-query scores
            by_query: dict[int, dict[int, float]] = {}
            for system_id, _ in kept.systems:
                for query_id, (score, _) in kept.of(system_id).items():
                    by_query.setdefault(query_id, {})[system_id] = score
            for query_id in saturated_queries(by_query):
                if query_id in self.keys.queries:
                    yield (self.keys.runs[run.pk], self.keys.queries[query_id],
                           len(by_query[query_id]))  # fmt: skip

    def _overlaps(self) -> Iterator[Row]:

        authors = {pk: author for pk, (_, author) in self.keys.checklists.items()}
        for row in overlap_rows(self.dataset):
            if row["a_checklist"] not in authors or row["b_checklist"] not in authors:
                continue
            run = row["run"]
            yield (
                self.keys.queries[row["query"]], authors[row["a_checklist"]],
                authors[row["b_checklist"]], row["is_self"], row["passed"], row["failed"],
                row["undecided"], row["total"],
                None if row["overlap"] == "" else row["overlap"], row["source"],
                self.keys.runs.get(run, f"run-{run}") if run else "",
            )  # fmt: skip

    # --- the small files ---------------------------------------------------------------

    def _dataset_json(self) -> bytes:
        d = self.dataset
        guideline = d.guideline
        data = {
            "schema_version": schema.SCHEMA_VERSION,
            "name": d.name,
            "description": d.description,
            "licence": d.licence,
            "guideline": {"name": guideline.name, "version": guideline.version}
            if guideline
            else None,
            "experts_per_query": d.experts_per_query,
            "experts_create_queries": d.experts_create_queries,
            "show_submitted_checklists": d.show_submitted_checklists,
            "formality_check": d.formality_check,
            "pass_threshold": d.pass_threshold,
            "label_policy": d.label_policy,
            "label_share": d.label_share,
            "scoring": d.scoring,
            "undecided": d.undecided,
            "blend_weight": d.blend_weight,
            "dimensions": d.dimensions,
        }
        return (json.dumps(data, ensure_ascii=False, indent=2) + "\n").encode()

    def _manifest(self) -> bytes:
        data = {
            "schema_version": schema.SCHEMA_VERSION,
            "dataset": self.dataset.name,
            "exported_at": _iso(self.now),
            "exported_by": self.user.get_username() if self.user else "",
            "include": list(self.options.include),
            "formats": list(self.options.formats),
            "tables": {
                name: {
                    "rows": count,
                    "files": [f"{name}.{fmt}" for fmt in self.options.formats],
                }
                for name, count in self.counts.items()
            },
        }
        return (json.dumps(data, ensure_ascii=False, indent=2) + "\n").encode()

    def _data_card(self) -> str:
        return data_card(self.dataset, self.counts, self.options, self.now, self.user)


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _keyed_previous(result: dict, names: dict[int, str]) -> dict:
    """A canary's result with the previous canary named by its run key, not this
    installation's id (an import turns the key back into its own id)."""
    if not result or result.get("previous") is None:
        return result
    return {**result, "previous": names.get(result["previous"])}


class _grouped:
    """Values of (key, value) pairs sorted by key, asked for by keys in increasing order
    (`of`): a merge of two ordered reads, holding one key's values at a time."""

    def __init__(self, pairs: Iterator[tuple[int, Any]]) -> None:
        self._pairs = pairs
        self._next = next(pairs, None)

    def of(self, key: int) -> list:
        values = []
        while self._next is not None and self._next[0] <= key:
            if self._next[0] == key:
                values.append(self._next[1])
            self._next = next(self._pairs, None)
        return values


def _chunked(rows: Iterable[Row], size: int = CHUNK_ROWS) -> Iterator[list[Row]]:
    chunk: list[Row] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def data_card(
    dataset: Dataset,
    counts: dict[str, int],
    options: ExportOptions,
    when: dt.datetime,
    user: Any = None,
) -> str:
    """README.md of the export: what is in it, under which licence, how it was made."""
    formats = ", ".join(options.formats)
    first = options.formats[0]
    lines = [
        f"# {dataset.name}",
        "",
        dataset.description or "(No description.)",
        "",
        "| | |",
        "|---|---|",
        f"| Licence | {dataset.licence or 'not stated: ask the dataset admins before sharing'} |",
        f"| Exported | {_iso(when)}{' by ' + user.get_username() if user else ''} |",
        f"| Schema version | {schema.SCHEMA_VERSION} |",
        f"| Formats | {formats} (one file per table and format) |",
        "",
        "## Contents",
        "",
        "| Table | Rows |",
        "|---|---:|",
        *(f"| `{name}` | {count:,} |" for name, count in counts.items()),
        "",
        "## How it was made",
        "",
        "Experts wrote one checklist per query, independently and blind to each other's work, "
        "each criterion a yes/no statement an answer must satisfy; every query has a query "
        "date, and cited sources must predate it. Checklists were validated against the "
        "guideline in `guidelines` when submitted. System answers were graded criterion by "
        "criterion by the judges in `judges` (their parameters are kept with every verdict), "
        "reviewers labelled items by hand (`labels`) and settled disagreements "
        "(`adjudications`). `scores` and `overlaps` are computed from those and are not "
        "imported back. Drafts are included with their status.",
        "",
        "Rows name each other by external keys (a query's `external_id`, a checklist's query "
        "and author, a criterion's `external_id` in its checklist, an answer's system, "
        "version, query and run label); `id` columns are the exporting installation's ids. "
        "The layout is described in the workbench's docs/data-formats.md.",
        "",
        "## Loading it",
        "",
        "```python",
        "from datasets import load_dataset",
        "",
        f'criteria = load_dataset("{"json" if first == "jsonl" else first}", '
        f'data_files="criteria.{first}", split="train")',
        "```",
        "",
        "Import it into a workbench with `manage.py import_dataset THIS.zip` or the Import page.",
        "",
    ]
    return "\n".join(lines)


# A verdict's columns as `_verdict_rows` reads them (from the table or an archive's file).
_VERDICT_COLUMNS = (
    "answer_id", "criterion_id", "judge_id", "sample", "outcome", "failure_kind", "rationale",
    "raw_output", "error_kind", "error", "prompt_tokens", "completion_tokens", "latency_ms",
    "attempts", "cache_hit", "cache_key", "judge_params", "created_at",
)  # fmt: skip


def _without_connection(row: tuple) -> tuple:
    """A verdict's or grade's row (both read outcome at 4, raw_output at 7, judge_params at
    16) without the judge's base URL and, for a reply that was not a verdict, its raw
    output: what export_sql.hidden_connection does in SQL."""
    params = {k: v for k, v in (row[16] or {}).items() if k != "base_url"}
    raw = "" if row[4] in RAW_OUTPUT_HIDDEN else row[7]
    return (*row[:7], raw, *row[8:16], params, *row[17:])


def export_chunks(
    dataset: Dataset,
    options: ExportOptions | None = None,
    *,
    user: AnyUser | None = None,
    progress: Progress | None = None,
) -> Iterator[bytes]:
    """The export zip of `dataset` as chunks of bytes. Callers check access first: only
    the dataset's admins export (`user` None: the command line, which sees everything)."""
    return Exporter(dataset, options or ExportOptions(), user=user, progress=progress).chunks()
