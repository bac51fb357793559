"""The worker fixture is a separate process that consumes the test queue and shares the DB."""

from __future__ import annotations

import os

from django.conf import settings
from django_celery_results.models import TaskResult

from config.tasks import ping


def test_worker_runs_in_its_own_process_and_answers(celery_worker):
    assert celery_worker.alive
    assert celery_worker.process.pid != os.getpid()
    result = ping.delay("hello")
    assert result.get(timeout=20) == "hello"


def test_worker_writes_to_the_test_database(celery_worker):
    # The result backend is the database: the worker's row proves it uses the test database.
    result = ping.delay("stored")
    result.get(timeout=20)
    assert TaskResult.objects.filter(task_id=result.id, status="SUCCESS").exists()


def test_worker_consumes_this_sessions_queue(celery_worker):
    assert celery_worker.queue == settings.CELERY_TASK_DEFAULT_QUEUE
    assert settings.CELERY_TASK_DEFAULT_QUEUE.startswith("test-")
    assert f"{settings.CELERY_TASK_DEFAULT_QUEUE}" in celery_worker.log()
