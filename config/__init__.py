"""Project configuration: settings, URLs, the Celery app, WSGI/ASGI entry points."""

from __future__ import annotations

# Importing the Celery app here makes `@shared_task` bind to it as soon as Django starts.
from config.celery import app as celery_app

__all__ = ["celery_app"]
