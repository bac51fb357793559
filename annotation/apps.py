from __future__ import annotations

from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        post_migrate.connect(_sync_role_groups, sender=self)


def _sync_role_groups(**kwargs: object) -> None:
    from annotation.services import role_groups_sync

    role_groups_sync()
