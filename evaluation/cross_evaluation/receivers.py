"""Automatic cross-evaluation when a query gets a new submitted checklist.

Connected in EvaluationConfig.ready(). The signal arrives after the submission committed;
a failure here is logged and never undoes or breaks the submission.
"""

from __future__ import annotations

import logging

from django.dispatch import receiver

from annotation.models import Checklist
from annotation.signals import checklist_submitted
from evaluation.cross_evaluation import services

logger = logging.getLogger(__name__)


@receiver(checklist_submitted, sender=Checklist, dispatch_uid="cross-evaluation-on-submit")
def cross_evaluate_on_submit(sender: type, checklist: Checklist, **kwargs: object) -> None:
    try:
        services.cross_evaluate_if_automatic(query_id=checklist.query_id)
    except Exception:  # the expert's submission succeeded; do not turn it into an error page
        logger.exception("Automatic cross-evaluation after checklist %s failed", checklist.pk)
