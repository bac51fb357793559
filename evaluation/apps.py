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
        from evaluation.checks import receivers as check_receivers  # noqa: F401
        from evaluation.cross_evaluation import receivers  # noqa: F401
        from evaluation.kept import receivers as kept_receivers

        kept_receivers.connect()
        # After `migrate` (a migration, or a deploy that changes a figure's version), the
        # kept figures are warmed in the background, not by their first readers.
        from django.db.models.signals import post_migrate

        from evaluation.analytics.receivers import warm_after_migrate

        post_migrate.connect(warm_after_migrate, sender=self, dispatch_uid="warm-figures")
        self._fill_annotation_hooks()
        from evaluation.datasets import purge
        from evaluation.runs import healing

        healing.add_sweep(purge.sweep)  # stalled dataset deletions, on the doctor's pace

    @staticmethod
    def _fill_annotation_hooks() -> None:
        """What annotation's pages and services ask of evaluation (annotation/hooks.py)."""
        from annotation import hooks
        from evaluation.analytics.editor_health import checklist_health
        from evaluation.analytics.figures import saturated_among
        from evaluation.datasets import purge
        from evaluation.formality.selectors import advice_on_wording, current_advice
        from evaluation.formality.services import formality_request

        hooks.provide(
            formality_request=formality_request,
            current_advice=current_advice,
            advice_on_wording=advice_on_wording,
            checklist_health=checklist_health,
            saturated_among=saturated_among,
            queue_purge=purge.send,
        )
