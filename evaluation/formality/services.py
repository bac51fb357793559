"""Formality advice on criteria: asking an LLM whether a criterion is well formed.
Runs' writes are evaluation.runs.services; judges' and panels' evaluation.judges.services."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from django.db import transaction

from annotation.models import Criterion, Dataset
from evaluation import task_names
from evaluation.formality import prompt as formality
from evaluation.formality.models import FormalityAdvice
from evaluation.judges.models import Judge
from evaluation.judges.services import judge_endpoint
from evaluation.judging import client, engine


def formality_judge() -> Judge | None:
    return Judge.objects.filter(is_formality_judge=True).order_by("name").first()


def formality_request(*, dataset: Dataset, criteria: Iterable[Criterion]) -> None:
    """Ask for advice on each criterion's current wording, once per wording.

    Called by the annotation services inside their transaction; the tasks are queued only
    when that transaction commits, so a rolled-back edit never reaches the LLM.
    """
    if not dataset.formality_check:
        return
    judge = formality_judge()
    if judge is None:
        return
    for criterion in criteria:
        if not criterion.text.strip():
            continue
        advice, created = FormalityAdvice.objects.get_or_create(
            criterion=criterion,
            text_hash=formality.text_hash(criterion.text),
            defaults={"judge": judge, "prompt_version": formality.PROMPT_VERSION},
        )
        if created:  # queued by name: the tasks module imports this one
            transaction.on_commit(
                lambda pk=advice.pk: task_names.signature(
                    task_names.CHECK_FORMALITY_TASK, (pk,)
                ).apply_async()
            )


def formality_run(*, advice_id: int) -> FormalityAdvice | None:
    """Call the judge for one pending advice and store what it says. Safe to repeat."""
    advice = (
        FormalityAdvice.objects.select_related("criterion__checklist__query", "judge")
        .filter(pk=advice_id)
        .first()
    )
    if advice is None or advice.status == FormalityAdvice.Status.DONE or advice.judge is None:
        return advice
    criterion = advice.criterion
    if formality.text_hash(criterion.text) != advice.text_hash:
        return advice  # the expert has rewritten it since; the newer wording has its own
    query = criterion.checklist.query
    messages = formality.messages(
        query=query.text, query_date=query.query_date, criterion=criterion.text
    )
    try:
        completion = asyncio.run(
            client.complete_json(
                judge_endpoint(advice.judge),
                messages,
                schema_name="formality",
                schema=formality.SCHEMA,
            )
        )
    except client.JudgeRejected as exc:
        return _advice_error(advice, f"The judge refused the request: {exc}")
    parsed = formality.parse(completion.data)
    if parsed is None:
        raw = completion.raw[: engine.UNPARSEABLE_KEPT]
        return _advice_error(advice, "The judge's answer could not be parsed.", raw)
    with transaction.atomic():
        advice.status = FormalityAdvice.Status.DONE
        advice.specific = parsed.specific
        advice.deterministic = parsed.deterministic
        advice.self_contained = parsed.self_contained
        advice.yes_no = parsed.yes_no
        advice.reason = parsed.reason
        advice.raw_output = completion.raw
        advice.error = ""
        advice.save()
    return advice


def _advice_error(advice: FormalityAdvice, message: str, raw: str = "") -> FormalityAdvice:
    advice.status = FormalityAdvice.Status.ERROR
    advice.error = message
    advice.raw_output = raw
    advice.save(update_fields=["status", "error", "raw_output", "updated_at"])
    return advice
