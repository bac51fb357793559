"""The one judge client: OpenAI-compatible chat completions that return JSON.

Nothing else in the project imports `openai`. Structured outputs (a JSON schema) are asked
for first; an endpoint that refuses them (400 on `response_format`) is remembered and asked
in JSON mode from then on (a judge's response_format "auto"; "json_schema" never falls back,
"json_object" always asks in JSON mode). Reasoning models are asked with
`max_completion_tokens` and `reasoning_effort`, without `temperature` (they refuse it); the
cached prompt tokens and reasoning tokens the provider reports are read from the usage.

Retries: `complete_json` leaves them to the openai client (fine for occasional calls such as
the formality check). `complete_json_with_retries`, used by runs, makes one attempt at a
time with the openai client's own retries off, and retries only what is transient (429,
5xx, timeouts, dropped connections) with exponential backoff and full jitter, honouring
Retry-After, both capped; every wait first passes the judge's shared rate limiter.

openai 1.89 to 3.x: 3.x is built on httpx2 instead of httpx (see `http_library` below); the rest of
what is used here (AsyncOpenAI.post, DefaultAioHttpClient, the exception classes) is the same.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import functools
import importlib
import json
import logging
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from config import egress
from config.backoff import backoff
from evaluation.judging import keys
from evaluation.judging.circuit import Circuit, Unreachable, Waited, is_outage
from evaluation.judging.ratelimit import RateLimiter, Unlimited


def _sdk() -> Any:
    """The openai package, imported at the first judge call rather than with this module:
    every web worker and the dataset export import this module but never call a judge, and
    the SDK with its HTTP stack costs about 38 MB of memory and 0.85 s of start-up in each
    of them (the export's peak RSS, docs/benchmarks.md)."""
    import openai

    return openai


@functools.cache
def http_library() -> Any:
    """The HTTP library under the openai client: httpx2 from openai 3.x, which no longer
    installs httpx; httpx before. Replies are asked for as its Response (complete_json)."""
    major = int(_sdk().__version__.split(".")[0])
    http = importlib.import_module("httpx2" if major >= 3 else "httpx")
    # It logs every request at INFO: one line per judge call in a worker's log is noise.
    logging.getLogger(http.__name__).setLevel(logging.WARNING)
    return http


# Endpoints (base URL, model) known to refuse json_schema response formats.
_NO_STRUCTURED_OUTPUTS: set[tuple[str, str]] = set()

Mode = Literal["json_schema", "json_object"]


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    model: str
    api_key_env: str = ""  # the *name* of the environment variable holding the key
    temperature: float = 0.0
    max_tokens: int = 512
    seed: int | None = None
    timeout: float = 60.0
    max_retries: int = 4
    # How the cap on output is spelt: "max_tokens", or "max_completion_tokens" (reasoning
    # models refuse max_tokens; the cap then covers the reasoning tokens too).
    token_parameter: str = "max_tokens"  # noqa: S105 - a parameter's name, not a secret
    response_format: str = "auto"  # "auto", "json_schema" or "json_object"
    reasoning_effort: str = ""  # sent when set, and then no temperature is sent

    def api_key(self) -> str:
        # Local servers (vLLM, Ollama, the loopback test server) accept any key. Only the
        # variables judges may read are read (evaluation/judging/keys.py).
        return keys.read_key(self.api_key_env) if self.api_key_env else "not-needed"


@dataclass(frozen=True)
class Completion:
    data: dict[str, Any] | None  # None when the output is not a JSON object
    raw: str
    mode: Mode
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: int = 0
    meta: dict[str, Any] = field(default_factory=dict)
    # Of the tokens above, when the provider reports them: prompt tokens read from its
    # prompt cache, completion tokens spent reasoning (billed as completion tokens).
    cached_tokens: int = 0
    reasoning_tokens: int = 0


class JudgeUnavailable(Exception):
    """The endpoint could not be reached or kept failing after the retries."""

    def __init__(self, message: str, kind: str = "unavailable", attempts: int = 1) -> None:
        super().__init__(message)
        self.kind = kind
        self.attempts = attempts


class JudgeRejected(Exception):
    """The endpoint refused the request (bad key, unknown model, invalid request), or the
    call may not be made. `kind` is the error kind verdicts record."""

    kind = "rejected"

    def __init__(self, message: str, kind: str | None = None) -> None:
        super().__init__(message)
        if kind is not None:
            self.kind = kind


class HostRefused(JudgeRejected):
    """The base URL's host is at an address judges may not call (evaluation/judging/keys.py,
    config/egress.py): no connection is made. The message names the rule, not the host."""

    kind = "host_not_allowed"

    @classmethod
    def of(cls, refused: egress.Refused) -> HostRefused:
        return cls(f"No call made: {keys.refusal_for_calls(refused)}")


class MissingApiKey(JudgeRejected):
    """The judge names an API key variable that this process does not have: no call is made.
    Unchecked, the openai client raises 'Missing credentials' as it is made, outside any
    call's error handling."""

    kind = "missing_key"


def missing_key(endpoint: Endpoint) -> str | None:
    """Why this process cannot call the endpoint for want of its key, or None. The message
    names the variable, never a value; a pre-flight check can call it without a client."""
    if endpoint.api_key_env and not keys.key_variable_allowed(endpoint.api_key_env):
        return (
            f"{endpoint.api_key_env} may not hold a judge key: only JUDGE_KEY_* variables or "
            "those JUDGE_KEY_VARIABLES lists (evaluation/judging/keys.py)."
        )
    if endpoint.api_key_env and not keys.read_key(endpoint.api_key_env):
        return f"The API key variable {endpoint.api_key_env} is not set on this worker."
    return None


def parse_json_object(raw: str) -> dict[str, Any] | None:
    """Strict: the whole content must be one JSON object (a fenced block is tolerated)."""
    text = raw.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _response_format(mode: Mode, name: str, schema: dict[str, Any]) -> dict[str, Any]:
    if mode == "json_object":
        return {"type": "json_object"}
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


class Session:
    """One HTTP connection pool to an endpoint, shared by many concurrent calls.

    Making one costs tens of milliseconds (an HTTP client with its TLS context), so
    workers keep them: see run_sync and shared_session.

    The transport is aiohttp when installed: httpx's connection pool scans every connection
    on each request and response (docs/benchmarks.md), which at 20+ calls in flight per
    pool costs several milliseconds of CPU per call, more than the rest of the call."""

    def __init__(self, endpoint: Endpoint, *, max_retries: int | None = None) -> None:
        # Checked on save too; this catches judges saved before the rule, in the Django admin
        # or by an import. An address written in the URL is judged here; a name when a call
        # is made (`checked`), as DNS answers then.
        self._base_url = endpoint.base_url
        self._checked_until = 0.0
        try:
            keys.endpoint_check(endpoint.base_url, resolve=False)
        except egress.Refused as refused:
            raise HostRefused.of(refused) from None
        if (missing := missing_key(endpoint)) is not None:  # no key, or not one judges may read
            raise MissingApiKey(missing)
        self._client = _sdk().AsyncOpenAI(
            base_url=endpoint.base_url,
            api_key=endpoint.api_key(),
            timeout=endpoint.timeout,
            max_retries=endpoint.max_retries if max_retries is None else max_retries,
            http_client=_http_client(endpoint.timeout),
        )

    async def checked(self) -> None:
        """Resolve the host's name and check every address it has, at most once every
        RECHECK_SECONDS: a name that points at a metadata or private address is refused
        before any connection (HostRefused); one that does not resolve fails the call as a
        dropped connection would, so it is tried again."""
        if time.monotonic() < self._checked_until:
            return
        try:
            await asyncio.to_thread(keys.endpoint_check, self._base_url)
        except egress.Unresolved:  # said without the host: run readers see this error
            raise JudgeUnavailable("The judge's host name did not resolve.", "connection") from None
        except egress.Refused as refused:
            raise HostRefused.of(refused) from None
        self._checked_until = time.monotonic() + RECHECK_SECONDS

    async def aclose(self) -> None:
        await self._client.close()


# A session checks where its host's name points again after this many seconds, so that a
# name moved to a refused address stops being called. The HTTP client resolves the name
# itself to connect (and caches it for 10 s), so a DNS server that answers differently from
# one lookup to the next can still slip past: docs/operations.md#which-hosts-judges-may-call.
RECHECK_SECONDS = 10.0


def _http_client(timeout: float) -> Any:
    """openai's aiohttp transport (the `openai[aiohttp]` extra), else its httpx one; both
    with redirects not followed (the SDK's default follows them), so that a judge never ends
    up calling a host the address rule did not check: a redirect is a JudgeRejected of kind
    "redirect". The extra is httpx-aiohttp under openai 2.x and vendored in 3.x; both raise
    RuntimeError when aiohttp is missing, so asking is the one check that holds for both."""
    openai = _sdk()
    try:
        return openai.DefaultAioHttpClient(timeout=timeout, follow_redirects=False)
    except RuntimeError:  # pragma: no cover - the extra is not installed
        return openai.DefaultAsyncHttpxClient(timeout=timeout, follow_redirects=False)


async def complete_json(
    endpoint: Endpoint,
    messages: list[dict[str, str]],
    *,
    schema_name: str,
    schema: dict[str, Any],
    session: Session | None = None,
) -> Completion:
    openai = _sdk()  # its errors are caught below
    own_session = session is None
    session = session or Session(endpoint)
    client = session._client
    key = (endpoint.base_url, endpoint.model)
    mode = _first_mode(endpoint)
    try:
        await session.checked()
        while True:
            started = time.monotonic()
            body = _body(endpoint, messages, _response_format(mode, schema_name, schema))
            try:
                # The plain JSON body and reply, not chat.completions.create(): its typed
                # transform and response models cost about a millisecond of CPU per call.
                # Errors, retries, auth and timeouts are still the openai client's.
                reply = http_library().Response
                response = await client.post("/chat/completions", body=body, cast_to=reply)
            except openai.BadRequestError as exc:
                if (
                    mode == "json_schema"
                    and endpoint.response_format == "auto"
                    and getattr(exc, "param", None) == "response_format"
                ):
                    _NO_STRUCTURED_OUTPUTS.add(key)
                    mode = "json_object"
                    continue
                raise JudgeRejected(str(exc)) from exc
            except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
                raise JudgeRejected(str(exc)) from exc
            except (openai.APIConnectionError, openai.RateLimitError) as exc:
                # APITimeoutError is an APIConnectionError: timeouts and dropped connections.
                raise JudgeUnavailable(f"{type(exc).__name__}: {exc}", _kind(exc)) from exc
            except openai.APIStatusError as exc:
                if 300 <= exc.status_code < 400:
                    raise JudgeRejected(
                        f"HTTP {exc.status_code}: the endpoint answered with a redirect, which "
                        "judges do not follow; give the base URL it redirects to.",
                        "redirect",
                    ) from exc
                if exc.status_code >= 500:
                    raise JudgeUnavailable(f"{type(exc).__name__}: {exc}", _kind(exc)) from exc
                raise JudgeRejected(f"HTTP {exc.status_code}: {exc}") from exc  # 404, 409, 413…
            raw, usage = _content_and_usage(response)
            return Completion(
                data=parse_json_object(raw),
                raw=raw,
                mode=mode,
                prompt_tokens=_count(usage.get("prompt_tokens")),
                completion_tokens=_count(usage.get("completion_tokens")),
                latency_ms=round((time.monotonic() - started) * 1000),
                cached_tokens=_detail(usage, "prompt_tokens_details", "cached_tokens"),
                reasoning_tokens=_detail(usage, "completion_tokens_details", "reasoning_tokens"),
            )
    finally:
        if own_session:
            await session.aclose()


def _first_mode(endpoint: Endpoint) -> Mode:
    """JSON mode when the judge asks for it, or ("auto") when its endpoint refused a schema
    before; else structured outputs."""
    if endpoint.response_format == "json_object":
        return "json_object"
    if endpoint.response_format == "auto" and (
        (endpoint.base_url, endpoint.model) in _NO_STRUCTURED_OUTPUTS
    ):
        return "json_object"
    return "json_schema"


def _body(
    endpoint: Endpoint, messages: list[dict[str, str]], response_format: dict[str, Any]
) -> dict[str, Any]:
    """The request body. Reasoning models take `max_completion_tokens` and refuse
    `temperature` (and `max_tokens`): with a reasoning effort set, no temperature is sent."""
    body: dict[str, Any] = {"model": endpoint.model, "messages": messages}
    if not endpoint.reasoning_effort:
        body["temperature"] = endpoint.temperature
    else:
        body["reasoning_effort"] = endpoint.reasoning_effort
    completion = endpoint.token_parameter == "max_completion_tokens"  # noqa: S105
    body["max_completion_tokens" if completion else "max_tokens"] = endpoint.max_tokens
    body["seed"] = endpoint.seed
    body["response_format"] = response_format
    return body


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _detail(usage: dict[str, Any], details: str, name: str) -> int:
    """A usage detail (cached or reasoning tokens) when the provider reports one; 0 else."""
    found = usage.get(details)
    return _count(found.get(name)) if isinstance(found, dict) else 0


def _content_and_usage(response: Any) -> tuple[str, dict[str, Any]]:
    """The first choice's text and the usage of a chat completion. A 200 that is not a
    completion gives empty text, which the caller records as unparseable."""
    try:
        payload = response.json()
        content = payload["choices"][0]["message"].get("content") or ""
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return response.text, {}
    usage = payload.get("usage")
    return (content if isinstance(content, str) else ""), (usage if isinstance(usage, dict) else {})


def _kind(exc: Exception) -> str:
    openai = _sdk()
    if isinstance(exc, openai.APITimeoutError) and not _refused(exc):
        return "timeout"
    if isinstance(exc, openai.RateLimitError):
        return "rate_limit"
    if isinstance(exc, openai.APIStatusError):
        return f"http_{exc.status_code}"
    return "connection"


def _refused(exc: BaseException) -> bool:
    """A connection that failed at once (refused, unreachable, name not found) somewhere in
    the exception's causes. The aiohttp transport maps those to a connect *timeout*."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, OSError) and not isinstance(cause, TimeoutError):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def _retry_after(exc: JudgeUnavailable) -> float | None:
    """Seconds the server asked us to wait (Retry-After, or OpenAI's retry-after-ms)."""
    cause = exc.__cause__
    response = getattr(cause, "response", None)
    if response is None:
        return None
    headers = response.headers
    try:
        if "retry-after-ms" in headers:
            return float(headers["retry-after-ms"]) / 1000
        if "retry-after" in headers:
            return float(headers["retry-after"])
    except ValueError:
        return None  # an HTTP date: rare from LLM endpoints; fall back to our backoff
    return None


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 6
    base_delay: float = 0.5
    max_delay: float = 20.0
    max_retry_after: float = 60.0


async def complete_json_with_retries(
    endpoint: Endpoint,
    messages: list[dict[str, str]],
    *,
    schema_name: str,
    schema: dict[str, Any],
    limiter: RateLimiter | None = None,
    token_estimate: int = 0,
    policy: RetryPolicy = RetryPolicy(),
    session: Session | None = None,
    circuit: Circuit | None = None,
) -> Completion:
    """One call with our own retries of transient failures; see the module docstring.

    With a circuit (evaluation.judging.circuit), every attempt first waits while the judge's
    circuit is open, and an outage failure while it is open does not spend a retry: the
    call waits for the endpoint instead (until the circuit's max_wait, Unreachable).

    Pass a Session made with max_retries=0 to share connections between calls."""
    limiter = limiter or Unlimited()
    single_attempt = replace(endpoint, max_retries=0)
    attempts = max(1, policy.attempts)
    attempt = made = 0
    waited = Waited()
    while attempt < attempts:
        attempt += 1
        probe = await _admitted(circuit, waited, made)
        try:
            await limiter.acquire(token_estimate)
        except Exception as exc:
            # an unavailable judge for this call: recorded as an error verdict, retryable.
            if attempt == attempts:
                raise JudgeUnavailable(
                    f"Rate limiter unavailable: {exc}", "rate_limiter", attempts=made
                ) from exc
            await asyncio.sleep(backoff(attempt, base=policy.base_delay, cap=policy.max_delay))
            continue
        made += 1
        sent = circuit.now() if circuit is not None else 0.0
        try:
            completion = await complete_json(
                single_attempt, messages, schema_name=schema_name, schema=schema, session=session
            )
        except JudgeUnavailable as exc:
            if circuit is not None and is_outage(exc.kind):
                if await circuit.failed(str(exc), probe=probe):
                    attempt -= 1  # the endpoint is down: wait for it, not against the call
                    continue
            elif circuit is not None:
                await circuit.succeeded(probe=probe, sent=sent)  # it answered, if only with a 429
            if attempt == attempts:
                exc.attempts = made
                raise
            waited_out = backoff(
                attempt, base=policy.base_delay, cap=policy.max_delay, jitter="full"
            )
            asked = _retry_after(exc)
            delay = min(asked, policy.max_retry_after) if asked is not None else waited_out
            await asyncio.sleep(delay)
            continue
        except JudgeRejected:
            if circuit is not None:
                await circuit.succeeded(probe=probe, sent=sent)  # a refusal is still an answer
            raise
        if circuit is not None:
            await circuit.succeeded(probe=probe, sent=sent)
        return replace(completion, meta={**completion.meta, "attempts": made})
    raise AssertionError("unreachable")


async def _admitted(circuit: Circuit | None, waited: Waited, made: int) -> bool:
    """Wait while the circuit is open; True when this attempt is its probe."""
    if circuit is None:
        return False
    try:
        return await circuit.admit(waited)
    except Unreachable as exc:
        raise JudgeUnavailable(str(exc), "judge_unreachable", attempts=made) from exc


# --- A cap on calls in flight across the whole worker process ------------------------------
class InFlightGate:
    """At most `limit` judge calls in flight across every thread (and event loop) of the
    process: Run.concurrency bounds one task, this bounds the worker. With more threads than
    limit / calls per task, a thread that is reading or writing the database leaves its
    slots to the others instead of idling them (docs/benchmarks.md)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._used = 0
        self._waiters: collections.deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]
        self._waiters = collections.deque()

    async def __aenter__(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._used < self.limit:
                self._used += 1
                return
            waiter = (loop, loop.create_future())
            self._waiters.append(waiter)
        try:
            await waiter[1]
        except asyncio.CancelledError:
            with self._lock:
                queued = waiter in self._waiters
                if queued:
                    self._waiters.remove(waiter)
            if not queued and waiter[1].done() and not waiter[1].cancelled():
                self._release()  # the slot was handed over just as we were cancelled
            raise

    async def __aexit__(self, *exc: object) -> None:
        self._release()

    def _release(self) -> None:
        with self._lock:
            if not self._waiters:
                self._used -= 1
                return
            loop, future = self._waiters.popleft()  # the slot passes to it directly
        loop.call_soon_threadsafe(self._hand_over, future)

    def _hand_over(self, future: asyncio.Future[None]) -> None:
        if future.cancelled():
            self._release()  # its waiter is gone: pass the slot on
        else:
            future.set_result(None)


_gates: dict[int, InFlightGate] = {}
_gates_lock = threading.Lock()


def worker_gate(limit: int | None) -> InFlightGate | None:
    """The process-wide gate for `limit` calls in flight (None or 0: no cap)."""
    if not limit:
        return None
    with _gates_lock:
        gate = _gates.get(limit)
        if gate is None:
            gate = _gates[limit] = InFlightGate(limit)
        return gate


# --- One event loop and one session per endpoint per worker thread -------------------------
# A Celery worker thread runs many tasks one after another. asyncio.run() would make a new
# loop, and so new connection pools, for each; instead each thread keeps one loop and the
# sessions opened on it (sessions are tied to the loop they were made on).
_thread = threading.local()


# Every thread's loop and sessions, so that they can be closed when the process exits
# (otherwise aiohttp reports each open connector as a leak).
_thread_pools: list[tuple[asyncio.AbstractEventLoop, dict[Any, Session]]] = []


def _thread_loop() -> asyncio.AbstractEventLoop:
    loop = getattr(_thread, "loop", None)
    if loop is None or loop.is_closed():
        loop = asyncio.new_event_loop()
        _thread.loop = loop
        _thread.sessions = {}
        _thread_pools.append((loop, _thread.sessions))
    return loop


@atexit.register
def _close_thread_pools() -> None:
    def close(loop: asyncio.AbstractEventLoop, sessions: dict[Any, Session]) -> None:
        async def close_all() -> None:
            await asyncio.gather(*(s.aclose() for s in sessions.values()), return_exceptions=True)

        try:
            loop.run_until_complete(close_all())
            loop.close()
        except Exception:  # noqa: S110 - best effort at exit, nothing left to tell
            pass

    for loop, sessions in _thread_pools:
        if loop.is_closed() or loop.is_running():
            continue
        # In a thread of its own: the exiting thread may still hold a running loop (pytest
        # with Playwright's sync API does), and a loop cannot run inside another.
        closer = threading.Thread(target=close, args=(loop, sessions), daemon=True)
        closer.start()
        closer.join(timeout=5)


def run_sync(coroutine: Any) -> Any:
    """Run a coroutine on this thread's own event loop (made on first use, then kept)."""
    return _thread_loop().run_until_complete(coroutine)


def shared_session(endpoint: Endpoint) -> Session:
    """This thread's session for the endpoint's server and key (retries are the caller's).

    Call it from inside run_sync(); parameters that vary per call (model, temperature) are
    sent with each request, so one session serves them all."""
    _thread_loop()
    key = (endpoint.base_url, endpoint.api_key(), endpoint.timeout)
    session = _thread.sessions.get(key)
    if session is None:
        session = _thread.sessions[key] = Session(endpoint, max_retries=0)
    return session
