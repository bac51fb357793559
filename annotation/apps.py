from __future__ import annotations

from django.apps import AppConfig, apps


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        post_migrate.connect(_after_migrate, sender=self)
        # Groups also hold evaluation permissions, which exist once evaluation has migrated.
        post_migrate.connect(_after_migrate, sender=apps.get_app_config("evaluation"))


def _after_migrate(**kwargs: object) -> None:
    # Imported here: they import models, and apps.py is imported before the app registry
    # is ready (Django loads every AppConfig first), so models cannot be imported at its top.
    from annotation.seeds import seed_reference_data
    from annotation.services import role_groups_sync

    role_groups_sync()
    seed_reference_data()
