"""The Celery app. Workers start with `celery -A config worker`."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("workbench")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def ensure_filesystem_broker_folders() -> None:
    """The embedded filesystem transport needs its folders before the first message."""
    from django.conf import settings

    for folder in getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", {}).values():
        if isinstance(folder, str) and settings.CELERY_BROKER_URL.startswith("filesystem://"):
            os.makedirs(folder, exist_ok=True)
