"""Writes for cross-evaluation: perfect answers (written or drafted by an LLM), the dataset's
settings, and starting cross-evaluation runs (by hand or automatically).

A perfect answer is an Answer of the reference system "Perfect answers" tied to the
checklist it satisfies (Answer.checklist), with run_label "perfect:<checklist id>". A
cross-evaluation run (Run.Kind.CROSS_EVALUATION) grades every perfect answer of its queries
against every submitted checklist of the same query, so one run yields the whole N × N
matrix; the verdict cache makes repeated pairs free.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from django.db import transaction

from annotation.models import Checklist, Dataset, Query
from evaluation import task_names
from evaluation.answers.models import Answer, System
from evaluation.cross_evaluation.models import CrossEvaluationSettings
from evaluation.judges.models import Judge, Panel
from evaluation.judges.services import judge_endpoint
from evaluation.judging import client, drafting
from evaluation.runs import services as runs
from evaluation.runs.models import Run

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

logger = logging.getLogger(__name__)

REFERENCE_SYSTEM = "Perfect answers"
MAX_TEXT = drafting.MAX_ANSWER_CHARS


class CrossEvaluationRefused(Exception):
    """The request cannot be carried out; the message says why, for the user."""


def reference_system() -> System:
    system, _ = System.objects.get_or_create(
        name=REFERENCE_SYSTEM, version="", defaults={"is_reference": True}
    )
    if not system.is_reference:  # a system of that name made by hand: mark it once
        System.objects.filter(pk=system.pk).update(is_reference=True)
        system.is_reference = True
    return system


def run_label(checklist: Checklist) -> str:
    return f"perfect:{checklist.pk}"


def _check_writable(checklist: Checklist) -> None:
    if checklist.status != Checklist.Status.SUBMITTED:
        raise CrossEvaluationRefused(
            "A perfect answer belongs to a submitted checklist: submit the checklist first."
        )


def _store(checklist: Checklist, text: str, **fields: object) -> tuple[Answer, bool]:
    """Create or update the perfect answer; returns it and whether its text changed."""
    text = text.strip()
    if not text:
        raise CrossEvaluationRefused("The perfect answer is empty.")
    if len(text) > MAX_TEXT:
        raise CrossEvaluationRefused(f"The perfect answer is longer than {MAX_TEXT} characters.")
    answer = Answer.objects.select_for_update().filter(checklist=checklist).first()
    if answer is None:
        answer = Answer.objects.create(
            system=reference_system(), query_id=checklist.query_id, checklist=checklist,
            run_label=run_label(checklist), text=text, **fields,
        )  # fmt: skip
        return answer, True
    changed = answer.text != text
    answer.text = text
    for name, value in fields.items():
        setattr(answer, name, value)
    answer.save(update_fields=["text", *fields, "updated_at"])
    return answer, changed


@transaction.atomic
def perfect_answer_save(*, checklist: Checklist, text: str, by: AbstractBaseUser) -> Answer:
    """Write or edit the checklist's perfect answer. The drafting LLM, if any, is kept."""
    checklist = Checklist.objects.select_for_update().get(pk=checklist.pk)
    _check_writable(checklist)
    answer, changed = _store(checklist, text, author=by)
    if changed:
        _schedule_automatic(checklist.query_id)
    return answer


def draft_judge(dataset: Dataset) -> Judge | None:
    """The first LLM judge (by name) of the dataset's cross-evaluation panel."""
    panel_id = (
        CrossEvaluationSettings.objects.filter(dataset=dataset)
        .values_list("panel_id", flat=True)
        .first()
    )
    if panel_id is None:
        return None
    return (
        Judge.objects.filter(memberships__panel=panel_id, kind=Judge.Kind.LLM)
        .order_by("name")
        .first()
    )


def perfect_answer_draft_request(*, checklist: Checklist, judge: Judge) -> str:
    """Queue a draft by `judge` once the transaction commits; returns the Celery task id
    (the page polls its state)."""
    _check_writable(checklist)
    if judge.kind != Judge.Kind.LLM:
        raise CrossEvaluationRefused("Only an LLM judge can draft an answer.")
    task_id = str(uuid.uuid4())
    based_on = _version(checklist.pk)
    draft = task_names.signature(task_names.DRAFT_TASK, (checklist.pk, judge.pk, based_on))
    transaction.on_commit(lambda: draft.apply_async(task_id=task_id))
    return task_id


def _version(checklist_id: int) -> str | None:
    """When the perfect answer was last written (None: not written yet): a draft replaces
    only the version it was asked for, never an edit made meanwhile."""
    written = (
        Answer.objects.filter(checklist=checklist_id).values_list("updated_at", flat=True).first()
    )
    return written.isoformat() if written else None


EDITED_MEANWHILE = (
    "The perfect answer was changed after the draft was asked for; it was kept as it is. "
    "Ask for a new draft to replace it."
)


def perfect_answer_draft_run(
    *, checklist_id: int, judge_id: int, based_on: str | None = None
) -> dict[str, object]:
    """Ask the judge for an answer satisfying every criterion and store it as the perfect
    answer, replacing the version the draft was asked for (`based_on`); an edit made in the
    meantime, or an earlier delivery of this task, is never overwritten. Returns what the
    page shows; an unreachable judge raises client.JudgeUnavailable for the task to retry."""
    checklist = Checklist.objects.select_related("query").filter(pk=checklist_id).first()
    judge = Judge.objects.filter(pk=judge_id).first()
    if checklist is None or judge is None:
        return {"ok": False, "error": "The checklist or the judge no longer exists."}
    if checklist.status != Checklist.Status.SUBMITTED:
        return {"ok": False, "error": "The checklist was reopened; submit it again to draft."}
    if _version(checklist.pk) != based_on:
        return {"ok": False, "error": EDITED_MEANWHILE}
    criteria = list(
        checklist.criteria.active().order_by("position", "id").values_list("kind", "text")
    )
    query = checklist.query
    messages = drafting.messages(query=query.text, query_date=query.query_date, criteria=criteria)
    endpoint = judge_endpoint(judge)
    endpoint = dataclasses.replace(
        endpoint, max_tokens=max(endpoint.max_tokens, drafting.MIN_MAX_TOKENS)
    )
    try:
        completion = asyncio.run(
            client.complete_json(
                endpoint, messages, schema_name="perfect_answer", schema=drafting.SCHEMA
            )
        )
    except client.JudgeRejected as exc:
        return {"ok": False, "error": f"The judge refused the request: {exc}"}
    text = drafting.parse(completion.data)
    if text is None:
        return {
            "ok": False,
            "error": "The judge's reply could not be parsed.",
            "raw": completion.raw,
        }
    with transaction.atomic():
        locked = Checklist.objects.select_for_update().get(pk=checklist.pk)
        if locked.status != Checklist.Status.SUBMITTED:
            return {"ok": False, "error": "The checklist was reopened while drafting."}
        if _version(locked.pk) != based_on:
            return {"ok": False, "error": EDITED_MEANWHILE}
        answer, changed = _store(
            locked,
            text,
            author=None,
            drafted_by=judge,
            draft_prompt_version=drafting.PROMPT_VERSION,
        )
        if changed:
            _schedule_automatic(locked.query_id)
    return {"ok": True, "answer_id": answer.pk}


def settings_for(dataset: Dataset) -> CrossEvaluationSettings:
    found = CrossEvaluationSettings.objects.select_related("panel").filter(dataset=dataset).first()
    return found or CrossEvaluationSettings(dataset=dataset)


@transaction.atomic
def settings_update(
    *, dataset: Dataset, panel: Panel | None, automatic: bool
) -> CrossEvaluationSettings:
    if automatic and panel is None:
        raise CrossEvaluationRefused("Automatic cross-evaluation needs a panel.")
    found, _ = CrossEvaluationSettings.objects.update_or_create(
        dataset=dataset, defaults={"panel": panel, "automatic": automatic}
    )
    return found


@transaction.atomic
def cross_evaluation_start(
    *,
    dataset: Dataset,
    panel: Panel,
    by: AbstractBaseUser | None = None,
    queries: Sequence[Query] = (),
    name: str = "",
) -> Run:
    """Create and start a cross-evaluation run over the queries (empty: the whole dataset)."""
    scope = Answer.objects.filter(
        query__dataset=dataset, checklist__status=Checklist.Status.SUBMITTED
    )
    if queries:
        scope = scope.filter(query__in=[q.pk for q in queries])
    if not scope.exists():
        raise CrossEvaluationRefused("There is no perfect answer to cross-evaluate yet.")
    if not name:
        label = f"query {queries[0].pk}" if len(queries) == 1 else "dataset"
        name = f"Cross-evaluation of {label}" if len(queries) <= 1 else "Cross-evaluation"
    run = runs.run_create(
        dataset=dataset, panel=panel, by=by, name=name, queries=queries,
        kind=Run.Kind.CROSS_EVALUATION,
    )  # fmt: skip
    try:
        return runs.run_start(run=run)
    except (runs.RunStateError, runs.RunRefused) as exc:
        raise CrossEvaluationRefused(str(exc)) from exc


def _schedule_automatic(query_id: int) -> None:
    transaction.on_commit(lambda: cross_evaluate_if_automatic(query_id=query_id))


def cross_evaluate_if_automatic(*, query_id: int) -> Run | None:
    """Start a cross-evaluation run over the query when its dataset asks for automatic
    cross-evaluation and at least two submitted checklists have perfect answers. Only new
    pairs cost judge calls: the rest come from the verdict cache."""
    query = Query.objects.select_related("dataset").filter(pk=query_id).first()
    if query is None:
        return None
    found = settings_for(query.dataset)
    if not found.automatic or found.panel_id is None:
        return None
    ready = Answer.objects.filter(query=query, checklist__status=Checklist.Status.SUBMITTED).count()
    if ready < 2:
        return None
    try:
        return cross_evaluation_start(
            dataset=query.dataset, panel=found.panel, queries=[query],
            name=f"Automatic cross-evaluation of query {query.pk}",
        )  # fmt: skip
    except CrossEvaluationRefused as exc:
        logger.warning("Automatic cross-evaluation of query %s not started: %s", query.pk, exc)
        return None
