from __future__ import annotations

from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Evaluation"

    def ready(self) -> None:
        from config.celery import ensure_filesystem_broker_folders

        ensure_filesystem_broker_folders()
        # Regression alerts listen to evaluation.runs.signals.run_ended; automatic
        # cross-evaluation listens to annotation's checklist_submitted signal. Kept figures
        # are keyed by review counters that the writes of criteria, queries, names and
        # answers move through these receivers (evaluation.kept.receivers).
        from evaluation.alerts import receivers as alerts_receivers  # noqa: F401
        from evaluation.analytics import receivers as analytics_receivers  # noqa: F401
        from evaluation.criterion_checks import receivers as check_receivers  # noqa: F401
        from evaluation.cross_evaluation import receivers  # noqa: F401
        from evaluation.kept import receivers as kept_receivers

        kept_receivers.connect()
