"""Reads of the evaluation app that belong to no package of their own. Runs' reads are in
evaluation.runs.selectors."""

from __future__ import annotations

from annotation.models import Criterion
from evaluation.formality.models import FormalityAdvice
from evaluation.formality.prompt import text_hash


def current_advice(criterion: Criterion) -> FormalityAdvice | None:
    """The formality advice on the criterion's present wording, if any.

    Reads `criterion.formality_advice.all()`: prefetch it when listing criteria.
    """
    wording = text_hash(criterion.text)
    return next((a for a in criterion.formality_advice.all() if a.text_hash == wording), None)


def advice_on_wording(criterion: Criterion) -> FormalityAdvice | None:
    """The advice on the criterion's present wording, read from the database (the advice box
    polls it while the advice is pending)."""
    return FormalityAdvice.objects.filter(
        criterion=criterion, text_hash=text_hash(criterion.text)
    ).first()
