"""Tasks queued by name run eagerly under CELERY_TASK_ALWAYS_EAGER even in a process that
has not imported the tasks modules yet (a web process: Celery's autodiscovery is lazy).
Before `evaluation.task_names`, such a task went to the broker by `send_task`: the run-end
receivers' tasks of an eager demo waited there for a worker that never came, or failed on
a broker that was not running. A fresh interpreter is the only place where no tasks module
is imported yet, so the check runs in one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROBE = """
import django
django.setup()
from celery import current_app
from evaluation import task_names
print("registered before:", "evaluation.warm_analytics" in current_app.tasks)
result = task_names.signature("evaluation.warm_analytics", (0,)).apply_async()
print("result:", type(result).__name__, result.state)
"""


def test_an_eager_task_queued_by_name_runs_in_a_process_that_never_imported_it(tmp_path):
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("DATABASE_URL",)},
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "VAR_DIR": str(tmp_path),  # a new SQLite file: no table, so the task itself fails
        "CELERY_TASK_ALWAYS_EAGER": "1",
        "CELERY_BROKER_URL": "redis://127.0.0.1:1/0",  # nothing listens: sending would fail
        "DEBUG": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "registered before: False" in done.stdout  # the case this guards
    # Ran here (and failed here, on the empty database), never sent to the broker.
    assert "result: EagerResult FAILURE" in done.stdout, done.stdout + done.stderr[-2000:]
    assert "Connection refused" not in done.stderr


def test_every_task_is_registered_under_a_name_of_task_names():
    """task_names holds every task's name once: each names a registered task, and every
    task of the project is registered under one of them."""
    from celery import current_app

    from evaluation import task_names

    current_app.loader.import_default_modules()
    names = {
        value
        for key, value in vars(task_names).items()
        if key.endswith("_TASK") and isinstance(value, str)
    }
    ours = {name for name in current_app.tasks if not name.startswith("celery.")}
    assert ours == names
