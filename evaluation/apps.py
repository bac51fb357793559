from __future__ import annotations

from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Evaluation"

    def ready(self) -> None:
        from config.celery import ensure_filesystem_broker_folders

        ensure_filesystem_broker_folders()
