"""Reads of the answers pages: a dataset's answers filtered, searched, sorted and paged; the
counts per system and run label; each shown answer's latest score (from the kept run
scores, never recounted) and label status; and the runs that graded one answer.

Sized for the `full` preset of bench/seed_scale.py (30,000 answers, a million verdicts):
the list is one query on the answers (a trigram index serves the text search on
PostgreSQL; migration 0028), and only the shown page's answers are looked up in verdicts,
labels and kept scores."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection
from django.db.models import (
    BooleanField,
    Count,
    Exists,
    ExpressionWrapper,
    Max,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
)
from django.db.models.functions import Length, Substr

from annotation.models import Dataset
from evaluation.answers.models import Answer
from evaluation.kept.counters import counters
from evaluation.labels.models import Adjudication, HumanLabel
from evaluation.runs import scores
from evaluation.runs.models import Run, Verdict
from evaluation.runs.scores import AnswerReport

PREVIEW = 140  # characters of an answer's text shown in its row

# Sort choices: (key, label, ordering). Ties broken by id, so pages never overlap.
SORTS = {
    "newest": ("Newest first", ("-id",)),
    "oldest": ("Oldest first", ("id",)),
    "system": ("System", ("system__name", "system__version", "run_label", "query_id", "id")),
    "query": ("Query", ("query_id", "system__name", "system__version", "run_label", "id")),
    "longest": ("Longest first", ("-length", "-id")),
    "shortest": ("Shortest first", ("length", "id")),
}


@dataclass(frozen=True)
class AnswerFilters:
    """What the Answers page is narrowed to. None: any."""

    q: str = ""
    system: int | None = None
    run_label: str | None = None  # "" is the answers without a run label
    query: int | None = None
    tool_calls: bool | None = None
    context: bool | None = None
    labelled: bool | None = None
    sort: str = "newest"


def _has_tool_calls() -> Q:
    """An assistant turn with at least one tool call. PostgreSQL: jsonb containment. SQLite
    (development) cannot, so the stored JSON text is searched: agent_fields writes a call
    as an object, so a non-empty list reads `"tool_calls": [{`."""
    if connection.vendor == "postgresql":
        return Q(turns__contains=[{"tool_calls": [{}]}])
    return Q(turns__icontains='"tool_calls": [{')


def _has_context() -> Q:
    return ~Q(context=[])


def _has_labels() -> Exists:
    return Exists(HumanLabel.objects.filter(answer=OuterRef("pk")))


def _has_adjudication() -> Exists:
    return Exists(Adjudication.objects.filter(answer=OuterRef("pk")))


def systems_answers(dataset: Dataset) -> QuerySet[Answer]:
    """The systems' answers of the dataset: not the perfect answers written for
    cross-evaluation (each has a run label of its own, "perfect:<checklist>"; their pages are
    the checklists' perfect-answer pages), as `/api/answers/` lists them."""
    return Answer.objects.filter(query__dataset=dataset, checklist__isnull=True)


def counts_by_system(dataset: Dataset) -> list[dict]:
    """The dataset's answers counted per system and run label, with the id of each group's
    newest answer (`latest`: which run labels are recent), in one query."""
    return list(
        systems_answers(dataset)
        .values("system_id", "system__name", "system__version", "run_label")
        .annotate(n=Count("id"), latest=Max("id"))
        .order_by("system__name", "system__version", "run_label")
    )


def answer_ids(dataset: Dataset, filters: AnswerFilters) -> QuerySet:
    """The ids of the dataset's answers as the filters say, in their order: what the page's
    paginator counts and slices. Ids only, so that sorting 30,000 answers sorts narrow rows
    in memory, and the shown rows' columns (answer_rows) are computed for those rows alone,
    not for every row an offset skips."""
    rows = systems_answers(dataset)
    if filters.q:
        rows = rows.filter(text__icontains=filters.q)
    if filters.system is not None:
        rows = rows.filter(system_id=filters.system)
    if filters.run_label is not None:
        rows = rows.filter(run_label=filters.run_label)
    if filters.query is not None:
        rows = rows.filter(query_id=filters.query)
    labelled = Q(_has_labels()) | Q(_has_adjudication())
    for wanted, condition in (
        (filters.tool_calls, _has_tool_calls()),
        (filters.context, _has_context()),
        (filters.labelled, labelled),
    ):
        if wanted is True:
            rows = rows.filter(condition)
        elif wanted is False:
            rows = rows.exclude(condition)
    ordering = SORTS.get(filters.sort, SORTS["newest"])[1]
    if any(key.lstrip("-") == "length" for key in ordering):
        rows = rows.annotate(length=Length("text"))
    return rows.order_by(*ordering).values_list("pk", flat=True)


def answer_rows(ids: list[int]) -> list[Answer]:
    """The shown answers, in the order of `ids`, with what a row shows: the system, the
    query's text, the length and start of the text, whether it has tool calls and context,
    and whether it is labelled or adjudicated. The turns, context and whole text are not
    read (an agent's may be a megabyte). One query."""
    found = (
        Answer.objects.filter(pk__in=ids)
        .select_related("system", "query")
        .only(
            "id", "run_label", "external_id", "created_at", "system", "query",
            "system__name", "system__version", "query__text",
        )
        .annotate(
            length=Length("text"),
            preview=Substr("text", 1, PREVIEW),
            has_tool_calls=ExpressionWrapper(_has_tool_calls(), output_field=BooleanField()),
            has_context=ExpressionWrapper(_has_context(), output_field=BooleanField()),
            labelled=_has_labels(),
            adjudicated=_has_adjudication(),
        )
    )  # fmt: skip
    by_id = {a.pk: a for a in found}
    return [by_id[pk] for pk in ids if pk in by_id]


@dataclass(frozen=True)
class LatestScore:
    run: Run
    report: AnswerReport
    updating: bool


def latest_scores(dataset: Dataset, answer_ids: list[int]) -> dict[int, LatestScore]:
    """Each answer's score in the latest run that judged it, read from that run's kept
    scores (evaluation.runs.scores.run_scores: computed once per state of a run, then read
    by piece). One query finds the latest run that judged each answer; then, per run found
    (one or two for a page, usually), its kept summary and the pieces holding these answers.

    The latest run per answer is found by probing the dataset's runs newest first for a
    verdict on the answer, and stopping at the first: one index probe per answer when the
    newest run judged it, where reading every verdict of the page's answers in every run
    and keeping the newest cost 31 ms at 30 nightly runs, and grew with each night."""
    if not answer_ids:
        return {}
    latest_run = (
        Run.objects.filter(dataset=dataset)
        .filter(Exists(Verdict.objects.filter(run=OuterRef("pk"), answer=OuterRef(OuterRef("pk")))))
        .order_by("-created_at", "-pk")
        .values("pk")[:1]
    )
    found_latest = (
        Answer.objects.filter(pk__in=answer_ids)
        .annotate(latest=Subquery(latest_run))
        .values_list("pk", "latest")
    )
    by_run: dict[int, list[int]] = {}
    for answer_id, run_id in found_latest:
        if run_id is not None:
            by_run.setdefault(run_id, []).append(answer_id)
    # Only the runs found, not every run of the dataset (365 wide rows a year of nights).
    runs = Run.objects.select_related("dataset").in_bulk(list(by_run))
    found: dict[int, LatestScore] = {}
    # The dataset's counters read once for every run (one read a run otherwise).
    at = counters(dataset.pk) if len(runs) > 1 else None
    for run_id, ids in by_run.items():
        run = runs[run_id]
        kept = scores.run_scores(run, at=at)
        for answer_id, report in kept.of_answers(ids).items():
            found[answer_id] = LatestScore(run, report, kept.updating)
    return found


def runs_of_answer(answer: Answer) -> list[Run]:
    """The runs that judged the answer, latest first (one query on the verdicts' run and
    answer index, through the dataset's runs)."""
    judged = Verdict.objects.filter(
        run__in=Run.objects.filter(dataset_id=answer.query.dataset_id), answer=answer
    ).values("run_id")
    return list(
        Run.objects.filter(pk__in=judged)
        .select_related("dataset", "panel")
        .order_by("-created_at", "-id")
    )
