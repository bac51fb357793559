"""Small helpers that read settings from the environment (12-factor)."""

from __future__ import annotations

import os
from pathlib import Path

TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off", ""}


def envbool(name: str, default: bool) -> bool:
    """Read a boolean; refuse anything that is not clearly yes or no."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in TRUE_WORDS:
        return True
    if value in FALSE_WORDS:
        return False
    raise ValueError(f"Environment variable {name}={raw!r} is not a boolean (use 1/0, true/false)")


def envint(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"Environment variable {name}={raw!r} is not an integer") from None


def envlist(name: str, default: str = "") -> list[str]:
    """A comma-separated list; blanks are dropped."""
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def envsecret(name: str, default: str | None = None) -> str | None:
    """Read a secret from NAME, or from the file named by NAME_FILE (Docker/Kubernetes secrets)."""
    path = os.environ.get(f"{name}_FILE")
    if path:
        return Path(path).read_text().strip()
    return os.environ.get(name, default)
