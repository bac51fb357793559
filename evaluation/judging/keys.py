"""Which environment variables may hold a judge's API key, and which hosts a judge may call.

A judge names the variable that holds its key (`Judge.api_key_env`), and every call sends
that variable's value as `Authorization: Bearer …` to the judge's base URL. Left open, an
admin could name SECRET_KEY or DATABASE_URL and point the judge at a listener of their own.
So only variables whose name starts with JUDGE_KEY_PREFIX (JUDGE_KEY_ by default), or that
JUDGE_KEY_VARIABLES lists, are ever read; the project's own secrets are refused even when
listed.

Where a judge may call is config/egress.py's rule, the one alert webhooks follow: never a
link-local or cloud metadata address (169.254.169.254, fd00:ec2::254, and the IPv6 forms
that carry them), even when listed; a loopback or private address only when the host is in
JUDGE_ALLOWED_HOSTS or JUDGE_ALLOW_PRIVATE_NETWORK is on (a self-hosted model server); a
public one unless JUDGE_ALLOWED_HOSTS is set and does not list it. No user name or password
in the URL: keys come from the key variable.

The rules are checked where a judge is saved (page form and API, through
`api_key_env_problem` and `base_url_problem`) and again where a key is read or a call made
(`read_key`, `endpoint_check`), so a judge saved before the rules, through the Django admin
or by an import, still cannot send a secret anywhere.
"""

from __future__ import annotations

import os
import re
from urllib.parse import parse_qsl

from django.conf import settings

from config import egress
from config.env import envbool

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
            f"and _, e.g. {prefix()}OPENAI), never the key itself."
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
    return egress.host_list(_setting("JUDGE_ALLOWED_HOSTS", ()))


PRIVATE_SWITCH = "JUDGE_ALLOW_PRIVATE_NETWORK"


def private_network_allowed() -> bool:
    """The operator's switch for judges on loopback or a private network (vLLM, Ollama)."""
    if not settings.configured:  # bench/ calls judges without Django: the variable decides
        return envbool(PRIVATE_SWITCH, False)
    return bool(getattr(settings, PRIVATE_SWITCH, False))


def policy() -> egress.Policy:
    return egress.Policy(
        "judges", "JUDGE_ALLOWED_HOSTS", allowed_hosts(), PRIVATE_SWITCH, private_network_allowed()
    )


CREDENTIALS = (
    "Give the base URL without a user name or password (no @): the key comes from the API "
    "key variable."
)
MASK = "***"  # what a page shows instead of a query value


def endpoint_check(base_url: str, *, resolve: bool = True) -> egress.Target:
    """Where a judge with this base URL may connect, or egress.Refused saying why (see the
    module's docstring). A name is resolved unless `resolve` is off."""
    try:
        return egress.check(base_url, policy(), resolve=resolve)
    except egress.Refused as refused:
        if refused.reason == "credentials":
            raise egress.Refused(CREDENTIALS, refused.reason) from None
        raise


def base_url_problem(base_url: str) -> str | None:
    """Why a judge may not be saved with this base URL, or None. A name that does not
    resolve here is let through: it may resolve only where the workers run, and every call
    checks the address again."""
    if not base_url:
        return None
    if any(value == MASK for _, value in _query(base_url)):
        return f"Give the query values in full: {MASK} is how a base URL is shown, not its value."
    try:
        endpoint_check(base_url)
    except egress.Unresolved:
        return None
    except egress.Refused as refused:
        return str(refused)
    return None


def refusal_for_calls(refused: egress.Refused) -> str:
    """Why a judge may not be called, as verdicts and run pages say it to everyone who sees
    the run: the rule, never the host or its address (connection details are for those who
    manage judges). It completes "Judge “X”: " or "No call made: "."""
    if refused.reason == "forbidden":
        return "its host is at a link-local or cloud metadata address, which judges never call."
    if refused.reason == "private":
        return (
            "its host is at a loopback or private address, which judges call only when the "
            f"operator allows it (JUDGE_ALLOWED_HOSTS or {PRIVATE_SWITCH})."
        )
    if refused.reason == "not_listed":
        return "its host is not in JUDGE_ALLOWED_HOSTS."
    return "its base URL is not one judges may call (an http(s) URL without credentials)."


def _query(url: str) -> list[tuple[str, str]]:
    return parse_qsl(url.partition("?")[2].partition("#")[0], keep_blank_values=True)


def shown_url(url: str) -> str:
    """The base URL as pages and the API show it: each query value (keys sometimes travel
    there: ?key=…, ?api-key=…) and any user name or password replaced by ***."""
    base, question, rest = url.partition("?")
    query, hash_, fragment = rest.partition("#")
    scheme, slashes, after = base.partition("//")
    authority, slash, path = after.partition("/")
    if slashes and "@" in authority:
        base = f"{scheme}//{MASK}@{authority.rpartition('@')[2]}{slash}{path}"
    if question:
        parts = (p.partition("=") for p in query.split("&"))
        query = "&".join(f"{name}={MASK}" if eq else name for name, eq, _ in parts)
    return f"{base}{question}{query}{hash_}{MASK if fragment else ''}"
