"""Settings come from the environment; production settings pass `check --deploy`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from config.env import envbool, envint, envlist, envsecret

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = {
    "DEBUG": "0",
    "SECRET_KEY": "x" * 20 + "a-long-random-production-secret-with-entropy-0123456789",
    "ALLOWED_HOSTS": "workbench.example.com",
    "DATABASE_URL": "postgresql://app@db.example.com:5432/workbench",
    "CELERY_BROKER_URL": "redis://redis.example.com:6379/0",
}


def run_manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # Without PYTEST_VERSION the settings behave as in a real deployment.
    test_only = {"PYTEST_VERSION", "DJANGO_ALLOW_ASYNC_UNSAFE", *PRODUCTION}
    clean = {k: v for k, v in os.environ.items() if k not in test_only}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_with_production_variables():
    result = run_manage("check", "--deploy", "--fail-level", "WARNING", env=PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_secret_key_is_required_when_debug_is_off():
    env = {k: v for k, v in PRODUCTION.items() if k != "SECRET_KEY"}
    result = run_manage("check", env=env)
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in result.stderr


def test_secret_key_can_come_from_a_file(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("from-a-file-secret-value\n")
    env = {k: v for k, v in PRODUCTION.items() if k != "SECRET_KEY"}
    result = run_manage(
        "shell", "-c", "from django.conf import settings; print(settings.SECRET_KEY)",
        env={**env, "SECRET_KEY_FILE": str(secret)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "from-a-file-secret-value" in result.stdout


def test_env_helpers(monkeypatch):
    monkeypatch.setenv("FLAG", "yes")
    monkeypatch.setenv("NUM", "12")
    monkeypatch.setenv("HOSTS", "a.example, b.example,,")
    assert envbool("FLAG", False) is True
    assert envbool("MISSING_FLAG", True) is True
    assert envint("NUM", 1) == 12
    assert envlist("HOSTS") == ["a.example", "b.example"]
    monkeypatch.setenv("FLAG", "maybe")
    with pytest.raises(ValueError, match="FLAG='maybe' is not a boolean"):
        envbool("FLAG", False)
    monkeypatch.setenv("NUM", "twelve")
    with pytest.raises(ValueError, match="NUM='twelve' is not an integer"):
        envint("NUM", 1)
    monkeypatch.delenv("TOKEN", raising=False)
    assert envsecret("TOKEN", "fallback") == "fallback"


def test_management_commands_run_in_development_through_dev_py(tmp_path):
    """`dev.py manage` gives a command the settings of `dev.py run` (DEBUG on), so no
    SECRET_KEY is needed on a laptop; manage.py without them says how to get there."""
    env = {"VAR_DIR": str(tmp_path)}
    plain = run_manage("check", env=env)
    assert plain.returncode != 0 and "python3.11 dev.py manage <command>" in plain.stderr
    test_only = {"PYTEST_VERSION", "DJANGO_ALLOW_ASYNC_UNSAFE", "DEBUG", "SECRET_KEY"}
    clean = {k: v for k, v in os.environ.items() if k not in test_only}
    result = subprocess.run(
        [sys.executable, "dev.py", "manage", "check"], cwd=ROOT, env={**clean, **env},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout
