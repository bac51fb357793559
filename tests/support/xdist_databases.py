"""One migrated test database per run, copied for each xdist worker.

Migrating a fresh test database takes about ten seconds of CPU; four workers migrating
their own at once held both cores for half a minute at the start of every run. Instead the
first worker to come migrates a template (under a file lock the others wait on), and every
worker copies it: PostgreSQL's `CREATE DATABASE ... TEMPLATE`, a file copy for SQLite.
pytest-django then finds the worker's database made (keepdb) and migrates nothing. Each
worker drops its copy at its end; the controller drops the template (tests/conftest.py).

Only under xdist: a run in one process creates and migrates its database as pytest-django
always did.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID", "")


def shared_var_dir() -> Path:
    """The VAR_DIR given to the run, inside which each worker has its own
    (tests/support/parallel.py)."""
    return Path(os.environ["TESTS_SHARED_VAR_DIR"])


def template_name(settings_dict: dict) -> str:
    """The template's name: the worker's test database without the worker's suffix."""
    if settings_dict["ENGINE"].endswith("sqlite3"):
        return str(shared_var_dir() / "test-db-template.sqlite3")
    name = settings_dict["TEST"]["NAME"] or f"test_{settings_dict['NAME']}"
    return f"{name.removesuffix(f'_{WORKER}')}_template"


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    shared_var_dir().mkdir(parents=True, exist_ok=True)
    with (shared_var_dir() / "test-db-template.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _ready_marker() -> Path:
    return shared_var_dir() / f"test-db-template.{RUN}.ready"


def copy_template_for_worker(connection) -> None:
    """Make the worker's test database (settings TEST NAME, already suffixed by
    pytest-django) a copy of this run's migrated template, making the template first if no
    worker has yet."""
    settings_dict = connection.settings_dict
    template = template_name(settings_dict)
    target = settings_dict["TEST"]["NAME"]
    with _locked():
        if not _ready_marker().exists():
            _migrate_template(connection, template)
            _ready_marker().touch()
        if settings_dict["ENGINE"].endswith("sqlite3"):
            Path(target).unlink(missing_ok=True)
            shutil.copyfile(template, target)
        else:
            quote = connection.ops.quote_name
            with connection.creation._nodb_cursor() as cursor:
                cursor.execute(f"DROP DATABASE IF EXISTS {quote(target)}")
                cursor.execute(f"CREATE DATABASE {quote(target)} TEMPLATE {quote(template)}")


def _migrate_template(connection, template: str) -> None:
    """create_test_db, as pytest-django would call it, under the template's name; the
    connection is left as it was (pointing at the configured database)."""
    from django.conf import settings

    settings_dict = connection.settings_dict
    name, test_name = settings_dict["NAME"], settings_dict["TEST"]["NAME"]
    settings_dict["TEST"]["NAME"] = template
    try:
        connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    finally:
        connection.close()
        settings_dict["NAME"] = name
        settings.DATABASES[connection.alias]["NAME"] = name
        settings_dict["TEST"]["NAME"] = test_name


def drop_worker_database(connection) -> None:
    """The worker's copy, dropped at its end (pytest-django keeps it: keepdb)."""
    connection.close()
    settings_dict = connection.settings_dict
    if settings_dict["ENGINE"].endswith("sqlite3"):
        Path(settings_dict["NAME"]).unlink(missing_ok=True)
        return
    connection.creation._destroy_test_db(settings_dict["NAME"], verbosity=0)


def drop_template(connection) -> None:
    """The controller's clean-up at the end of an xdist run: the template and its markers.
    Straight through psycopg: the controller runs no test, and pytest-django keeps its
    Django connections blocked."""
    settings_dict = connection.settings_dict
    for marker in shared_var_dir().glob("test-db-template.*.ready"):
        marker.unlink(missing_ok=True)
    if settings_dict["ENGINE"].endswith("sqlite3"):
        Path(template_name(settings_dict)).unlink(missing_ok=True)
        return
    import psycopg

    params = {**connection.get_connection_params(), "dbname": "postgres"}
    with psycopg.connect(**params, autocommit=True) as admin:
        quoted = connection.ops.quote_name(template_name(settings_dict))
        admin.execute(f"DROP DATABASE IF EXISTS {quoted}")
