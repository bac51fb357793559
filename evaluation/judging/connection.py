""" "Test connection" for a judge: one small real call through judging.client, no retries,
a short timeout, and a plain account of what happened. Async, no ORM."""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass, replace

from evaluation.judging import client

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
    "unauthorized": "The endpoint refused the API key (HTTP 401).",
    "forbidden": "The key may not use this model or endpoint (HTTP 403).",
    "model_not_found": "The endpoint does not know this model (HTTP 404).",
    "not_found": "Nothing answers at this base URL (HTTP 404): check the path, e.g. /v1.",
    "bad_request": "The endpoint rejected the request (HTTP 400).",
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
    message: str = ""
    reply: str = ""  # the model's raw reply when ok
    mode: str = ""  # json_schema or json_object
    latency_ms: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def help(self) -> str:
        return KIND_HELP.get(self.kind, "")


def key_is_set(api_key_env: str) -> bool:
    """Whether this process has the named variable (never its value)."""
    return bool(api_key_env) and bool(os.environ.get(api_key_env))


async def check_connection(endpoint: client.Endpoint) -> ConnectionResult:
    if endpoint.api_key_env and not key_is_set(endpoint.api_key_env):
        return ConnectionResult(
            False, "missing_key", f"{endpoint.api_key_env} is not set; no call was made."
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
        return _failure(_unavailable_kind(exc), exc, started)
    except client.JudgeRejected as exc:
        return _failure(_rejected_kind(exc), exc, started)
    except Exception as exc:  # a malformed base URL must become a message, not a 500
        return _failure("error", exc, started)
    return ConnectionResult(
        True,
        reply=completion.raw[:2000],
        mode=completion.mode,
        latency_ms=completion.latency_ms,
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
    )


def _failure(kind: str, exc: Exception, started: float) -> ConnectionResult:
    latency = round((time.monotonic() - started) * 1000)
    return ConnectionResult(False, kind, str(exc)[:1000], latency_ms=latency)


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
