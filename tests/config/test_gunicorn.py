"""The production web server's settings (config/gunicorn.py): workers of two threads, each
of which compiles the templates and freezes its start-up objects before it serves, so that
Python's full garbage collections stop walking them inside requests (config/warm.py); an
access log without the secrets of URLs (config/logs.py)."""

from __future__ import annotations

import gc
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

from config import warm
from tests.support.beat import wait_for

ROOT = Path(__file__).resolve().parents[2]


def test_every_project_template_compiles_at_start():
    templates = sorted((ROOT / "templates").rglob("*.html"))
    fragments = sorted((ROOT / "templates" / "jinja2").rglob("*.jinja"))
    assert warm.project_template_dirs() == [ROOT / "templates"]
    assert fragments and templates and len(templates) > 50
    assert warm.compile_templates() == len(templates) + len(fragments)


def test_a_ready_worker_has_frozen_what_it_loaded():
    try:
        frozen = warm.ready_worker()
        # Django, the project's modules, the URL patterns and every compiled template. (Not
        # compared with a later count: once, in a test process with other threads, the
        # later count was 2 higher; why was not found.)
        assert frozen > 50_000
        assert gc.get_freeze_count() > 50_000
    finally:
        gc.unfreeze()  # the test process goes on collecting as before


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_gunicorn_with_the_project_settings_serves_from_ready_workers(tmp_path):
    port = _free_port()
    log = tmp_path / "gunicorn.log"
    env = {
        **os.environ, "DEBUG": "0", "SECRET_KEY": "gunicorn-test-secret-key-0123456789abcdef",
        "ALLOWED_HOSTS": "127.0.0.1", "SECURE_SSL_REDIRECT": "0", "VAR_DIR": str(tmp_path),
    }  # fmt: skip
    with log.open("w") as output:
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "python:config.gunicorn",
             "config.wsgi:application", "--bind", f"127.0.0.1:{port}", "--workers", "2",
             "--log-level", "info", "--access-logfile", "-"],
            cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip

    def livez() -> bool:
        assert server.poll() is None, log.read_text()  # gunicorn exited: its log says why
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/livez", timeout=5) as page:
                return page.status == 200
        except OSError:  # not listening yet
            return False

    try:
        wait_for(livez, 90, log.read_text)
        # Each worker says so before it accepts a request; both have started by now or soon.
        wait_for(lambda: log.read_text().count("worker ready") >= 2, 90, log.read_text)
        # Two threads per worker: a request waiting on the database leaves the worker free.
        assert "Using worker: gthread" in log.read_text()
        ready = [line for line in log.read_text().splitlines() if "worker ready" in line]
        frozen = [int(line.split(", ")[1].split()[0]) for line in ready]
        assert all(count > 50_000 for count in frozen), ready
        # A token in the URL is redacted in the access log (config/logs.py, issue 38).
        secret = "cwb_NotInTheLogs123"
        url = f"http://127.0.0.1:{port}/livez?token={secret}&Key={secret}&page=2"
        with urllib.request.urlopen(url, timeout=5) as page:
            assert page.status == 200
        wait_for(lambda: "/livez?token=" in log.read_text(), 30, log.read_text)
        assert secret not in log.read_text()
        assert "GET /livez?token=REDACTED&Key=REDACTED&page=2 HTTP/1.1" in log.read_text()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
