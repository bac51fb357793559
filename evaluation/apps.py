from __future__ import annotations

from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Evaluation"

    def ready(self) -> None:
        from config.celery import ensure_filesystem_broker_folders

        ensure_filesystem_broker_folders()
        # Regression alerts listen to evaluation.runs.signals.run_ended; automatic
        # cross-evaluation listens to annotation's checklist_submitted signal. Cached agreement
        # figures are keyed by a revision these signals bump.
        from evaluation.agreement import revision
        from evaluation.alerts import receivers as alerts_receivers  # noqa: F401
        from evaluation.analytics import receivers as analytics_receivers  # noqa: F401
        from evaluation.cross_evaluation import receivers  # noqa: F401

        revision.connect()
