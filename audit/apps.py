from __future__ import annotations

from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    verbose_name = "Audit history"
    default_auto_field = "django.db.models.BigAutoField"
