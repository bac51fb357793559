""" "Test connection" for a judge: one small real call through judging.client, no retries,
a short timeout, and a plain account of what happened. Async, no ORM.

The account is the status, the latency and a short classified error written here, never
the endpoint's reply or error text: whatever answers at the base URL chooses those bytes,
and a person able to point a judge anywhere must not get a proxy that reads internal
services back to them. The key variable and the host follow evaluation/judging/keys.py, and a
redirect is reported, not followed.
"""

from __future__ import annotations

import re
import socket
import time
from dataclasses import dataclass, replace

from config import egress
from evaluation.judging import client, keys

PROMPT_VERSION = "connection-v1"
TIMEOUT_CAP = 10.0  # seconds: a person is waiting for the button
SCHEMA = {
    "type": "object",
    "properties": {"reply": {"type": "string"}},
    "required": ["reply"],
    "additionalProperties": False,
}
MESSAGES = [
    {"role": "system", "content": 'Reply with the JSON object {"reply": "ok"}.'},
    {"role": "user", "content": "Connection test."},
]

# What each error kind means, for the page.
KIND_HELP = {
    "missing_key": "The API key variable is not set in the web process's environment.",
    "key_not_allowed": "Judge keys are read only from JUDGE_KEY_* variables or those "
    "JUDGE_KEY_VARIABLES lists; no call was made.",
    "host_not_allowed": "Judges may not call this host's address (JUDGE_ALLOWED_HOSTS, "
    "JUDGE_ALLOW_PRIVATE_NETWORK); no call was made.",
    "unauthorized": "The endpoint refused the API key (HTTP 401).",
    "forbidden": "The key may not use this model or endpoint (HTTP 403).",
    "model_not_found": "The endpoint does not know this model (HTTP 404).",
    "not_found": "Nothing answers at this base URL (HTTP 404): check the path, e.g. /v1.",
    "bad_request": "The endpoint rejected the request (HTTP 400).",
    "redirect": "The endpoint answered with a redirect (HTTP 3xx), which judges do not "
    "follow: give the base URL it redirects to.",
    "timeout": "No answer within the timeout.",
    "unreachable": "The endpoint could not be reached (connection refused, DNS, TLS…).",
    "rate_limit": "The endpoint is rate limiting this key (HTTP 429).",
    "server_error": "The endpoint failed (HTTP 5xx).",
    "error": "The call failed.",
}


@dataclass(frozen=True)
class ConnectionResult:
    ok: bool
    kind: str = ""  # an error kind from KIND_HELP when not ok
    message: str = ""  # short and written here (an HTTP status, a model name), never a reply
    json_reply: bool = False  # when ok: whether the model's reply was a JSON object
    mode: str = ""  # json_schema or json_object
    latency_ms: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def help(self) -> str:
        return KIND_HELP.get(self.kind, "")

    @property
    def sentence(self) -> str:
        """The failure as the page says it, once: the message when it is a sentence written
        here (the key variable not set, the model unknown), else what the kind means with
        the HTTP status folded in ("The endpoint failed (HTTP 503)."). Empty when ok."""
        if self.ok:
            return ""
        if self.message and not self.message.startswith("HTTP "):
            return self.message
        text = self.help or KIND_HELP["error"]
        if not self.message:
            return text
        if "(HTTP " in text:
            return re.sub(r"\(HTTP [^)]*\)", f"({self.message})", text)
        return f"{text.removesuffix('.')} ({self.message})."


key_is_set = keys.key_is_set  # pages ask through here: "set here" only for allowed names


async def check_connection(endpoint: client.Endpoint) -> ConnectionResult:
    if endpoint.api_key_env and not keys.key_variable_allowed(endpoint.api_key_env):
        return ConnectionResult(False, "key_not_allowed")
    try:
        keys.endpoint_check(endpoint.base_url)  # the page is for site admins: say which rule
    except egress.Unresolved:
        pass  # the call says "unreachable"
    except egress.Refused as refused:
        return ConnectionResult(False, "host_not_allowed", str(refused))
    if endpoint.api_key_env and not key_is_set(endpoint.api_key_env):
        return ConnectionResult(
            False,
            "missing_key",
            f"{endpoint.api_key_env} is not set in the web process's environment; no call "
            "was made.",
        )
    probe = replace(
        endpoint,
        timeout=min(endpoint.timeout, TIMEOUT_CAP),
        max_retries=0,
        max_tokens=min(endpoint.max_tokens, 64),
    )
    started = time.monotonic()
    try:
        completion = await client.complete_json(
            probe, MESSAGES, schema_name="connection_test", schema=SCHEMA
        )
    except client.JudgeUnavailable as exc:
        return _failure(_unavailable_kind(exc), exc, started, endpoint)
    except client.JudgeRejected as exc:
        return _failure(_rejected_kind(exc), exc, started, endpoint)
    except Exception as exc:  # a malformed base URL must become a message, not a 500
        return _failure("error", exc, started, endpoint)
    return ConnectionResult(
        True,
        json_reply=completion.data is not None,
        mode=completion.mode,
        latency_ms=completion.latency_ms,
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
    )


def _failure(
    kind: str, exc: Exception, started: float, endpoint: client.Endpoint
) -> ConnectionResult:
    latency = round((time.monotonic() - started) * 1000)
    return ConnectionResult(False, kind, _short_message(kind, exc, endpoint), latency_ms=latency)


def _short_message(kind: str, exc: Exception, endpoint: client.Endpoint) -> str:
    """What the page may show beside the kind: our own words and numbers, no reply text."""
    if kind == "model_not_found":
        return f"The endpoint does not know the model “{endpoint.model}” (HTTP 404)."
    status = next(
        (s for c in _causes(exc) if isinstance(s := getattr(c, "status_code", None), int)), None
    )
    return f"HTTP {status}" if status else ""


def _causes(exc: BaseException):
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        yield cause
        cause = cause.__cause__ or cause.__context__


def _unavailable_kind(exc: client.JudgeUnavailable) -> str:
    # Some transports (aiohttp under openai) report a refused connection as a connect
    # timeout; the underlying OS error says what really happened.
    if any(isinstance(c, ConnectionError | socket.gaierror) for c in _causes(exc)):
        return "unreachable"
    kind = exc.kind
    if kind in ("timeout", "rate_limit"):
        return kind
    if kind.startswith("http_5"):
        return "server_error"
    return "unreachable"


def _rejected_kind(exc: client.JudgeRejected) -> str:
    if exc.kind in ("redirect", "host_not_allowed"):
        return exc.kind
    # The client raises JudgeRejected from the openai error, which carries the HTTP status.
    cause = exc.__cause__
    status = getattr(cause, "status_code", None)
    if status == 401:
        return "unauthorized"
    if status == 403:
        return "forbidden"
    if status == 404:
        return (
            "model_not_found" if getattr(cause, "code", None) == "model_not_found" else "not_found"
        )
    if status == 400:
        return "bad_request"
    return "error"
