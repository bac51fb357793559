"""Tasks queued by name: services and receivers never import a tasks module, so task code
can import them freely (no import cycle)."""

from __future__ import annotations

from collections.abc import Iterable

from celery import current_app
from celery.canvas import Signature


def signature(name: str, args: Iterable = ()) -> Signature:
    """The task `name` with `args`, ready for `apply_async`. With CELERY_TASK_ALWAYS_EAGER
    (the test suite's eager fixtures, a demo without a worker) the tasks modules are
    imported first: a web process imports them only when a worker would (Celery's
    autodiscovery is lazy), and a task unknown to the app goes to the broker by
    `send_task`, which never runs eagerly; the message would wait there for a worker of
    another process, or for ever."""
    if current_app.conf.task_always_eager and name not in current_app.tasks:
        current_app.loader.import_default_modules()
    return current_app.signature(name, args=tuple(args))
