"""Which environment variables may hold a judge's API key, and which hosts a judge may call.

A judge names the variable that holds its key (`Judge.api_key_env`), and every call sends
that variable's value as `Authorization: Bearer …` to the judge's base URL. Left open, an
admin could name SECRET_KEY or DATABASE_URL and point the judge at a listener of their own.
So only variables whose name starts with JUDGE_KEY_PREFIX (JUDGE_KEY_ by default), or that
JUDGE_KEY_VARIABLES lists, are ever read; the project's own secrets are refused even when
listed. JUDGE_ALLOWED_HOSTS, when set, restricts the hosts a judge may call at all.

The rules are checked where a judge is saved (page form and API, through
`api_key_env_problem` and `base_url_problem`) and again where a key is read or a call made
(`read_key`, `host_allowed`), so a judge saved before the rules, or through the Django admin,
still cannot send a secret anywhere.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit

from django.conf import settings

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# Never a judge key, whatever the settings say: the project's own secrets and connections.
NEVER = frozenset(
    {
        "SECRET_KEY", "SECRET_KEY_FILE", "DATABASE_URL", "CELERY_BROKER_URL",
        "CELERY_RESULT_BACKEND", "EMAIL_HOST_PASSWORD", "EMAIL_HOST_PASSWORD_FILE",
        "HEALTHZ_TOKEN", "DEMO_PASSWORD",
    }
)  # fmt: skip


def _setting(name: str, default: object) -> object:
    # The judge client also runs outside Django (bench/): the defaults apply there.
    return getattr(settings, name, default) if settings.configured else default


def prefix() -> str:
    return str(_setting("JUDGE_KEY_PREFIX", "JUDGE_KEY_"))


def allowed_names() -> frozenset[str]:
    return frozenset(_setting("JUDGE_KEY_VARIABLES", ()))


def key_variable_allowed(name: str) -> bool:
    if not name or not ENV_NAME.match(name) or name.upper() in NEVER:
        return False
    return (bool(prefix()) and name.startswith(prefix())) or name in allowed_names()


def api_key_env_problem(name: str) -> str | None:
    """Why this variable name cannot hold a judge key, or None when it can (or is empty)."""
    if not name:
        return None
    if not ENV_NAME.match(name):
        # Most likely a key pasted into the wrong box: say so without echoing it back.
        return (
            "Give the name of the environment variable that holds the key (letters, digits "
            "and _, e.g. OPENAI_API_KEY), never the key itself."
        )
    if not key_variable_allowed(name):
        listed = ", ".join(sorted(allowed_names()))
        also = f" or one of {listed}" if listed else ""
        return (
            f"Judge keys are read only from variables whose name starts with {prefix()}{also} "
            f"(settings JUDGE_KEY_PREFIX and JUDGE_KEY_VARIABLES), so that no other secret of "
            f"the server can be sent to an endpoint."
        )
    return None


def read_key(name: str) -> str:
    """The key in the named variable; empty for a variable judges may not read."""
    return os.environ.get(name, "") if key_variable_allowed(name) else ""


def key_is_set(name: str) -> bool:
    """Whether this process holds a key in the named variable (never its value). Names that
    judges may not read are "not set": the page must not tell which other variables exist."""
    return bool(read_key(name))


def allowed_hosts() -> tuple[str, ...]:
    return tuple(h.lower() for h in _setting("JUDGE_ALLOWED_HOSTS", ()) if h)


def host_allowed(base_url: str) -> bool:
    """Whether a judge may call this base URL: any host when JUDGE_ALLOWED_HOSTS is empty;
    otherwise its host equals an entry, or ends with an entry that starts with a dot."""
    hosts = allowed_hosts()
    if not hosts:
        return True
    try:
        host = (urlsplit(base_url).hostname or "").lower()
    except ValueError:
        return False
    return any(host == h or (h.startswith(".") and host.endswith(h)) for h in hosts)


def base_url_problem(base_url: str) -> str | None:
    if base_url and not host_allowed(base_url):
        return (
            "This host is not in JUDGE_ALLOWED_HOSTS: judges may call only "
            + ", ".join(allowed_hosts())
            + "."
        )
    return None
