"""What lets the suite run in several processes at once (pytest-xdist, `-n`), loaded with
`-p tests.support.parallel` (pyproject.toml's addopts) before Django reads its settings.

Each xdist worker (gw0, gw1, ...) is a whole test session of its own:

- its own VAR_DIR, a folder named after it inside the one given (or `var/`): the SQLite
  test database, the embedded broker's folders, exports and imports of one worker never
  meet another's, nor those of the other pass that .ci/run runs beside it. The Celery
  workers and beat processes a test starts inherit it (tests/support/celery_worker.py).
- its own test database: pytest-django names it `test_<name>_gw0` on PostgreSQL and adds
  the same suffix to the SQLite file; each is a copy of one database migrated once per run
  (tests/support/xdist_databases.py);
- its own Celery queue, `test-<pid>` (config/settings.py), on the shared Redis or in its own
  broker folder;
- its own ports: live servers, loopback judges and private Redis servers all bind port 0.

Without `-n` (or with `-n 0`) nothing here changes anything.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

WORKER = os.environ.get("PYTEST_XDIST_WORKER")  # set by xdist before this module is imported
# The run's own VAR_DIR, where the workers' folders are and the migrated template database
# they copy (tests/support/xdist_databases.py); the workers inherit it from the controller.
os.environ.setdefault("TESTS_SHARED_VAR_DIR", os.environ.get("VAR_DIR") or str(ROOT / "var"))
if WORKER:
    base = Path(os.environ["TESTS_SHARED_VAR_DIR"])
    os.environ["VAR_DIR"] = str(base / WORKER)
    Path(os.environ["VAR_DIR"]).mkdir(parents=True, exist_ok=True)
